//! `{{NAME}}` in templated strings, read by the scenario format's grammar
//! (`loadlab_scenario::placeholder`): `{{NAME}}` is the variable `NAME`, `{{{{` is a literal
//! `{{`. Only writing (escaping, names from free text) here; substitution is
//! the scenario engine's job (except [`substitute`], which an importer uses to compute a value
//! it cannot leave templated, such as a basic-auth header).

/// The scenario format's own grammar (one reading of `{{NAME}}` for the file written and the
/// loader that reads it back).
pub use loadlab_scenario::placeholder::{is_name, names, pieces, Piece};

/// A literal string made safe to write where a template is expected.
pub fn escape(literal: &str) -> String {
    literal.replace("{{", "{{{{")
}

/// Replaces every variable with `lookup(name)`; `None` leaves `{{name}}` in place.
pub fn substitute(s: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let Ok(pieces) = pieces(s) else {
        return s.to_string();
    };
    let mut out = String::with_capacity(s.len());
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Braces => out.push_str("{{{{"),
            Piece::Var(name) => match lookup(name) {
                Some(v) => out.push_str(&v),
                None => {
                    out.push_str("{{");
                    out.push_str(name);
                    out.push_str("}}");
                }
            },
        }
    }
    out
}

/// A variable name made from free text (a JSON key, a header name): upper case, `_` for
/// anything else, never starting with a digit, never empty.
pub fn name_from(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    let out = out.trim_matches('_').to_string();
    match out.chars().next() {
        None => "VALUE".to_string(),
        Some(c) if c.is_ascii_digit() => format!("V_{out}"),
        Some(_) => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_through_pieces() {
        for literal in ["{{", "a{{{b", "{{x}}", "}} {", "plain"] {
            let escaped = escape(literal);
            let back: String = pieces(&escaped)
                .unwrap()
                .into_iter()
                .map(|p| match p {
                    Piece::Text(t) => t.to_string(),
                    Piece::Braces => "{{".to_string(),
                    Piece::Var(v) => panic!("{literal:?} read as variable {v}"),
                })
                .collect();
            assert_eq!(back, literal);
        }
    }

    #[test]
    fn names_from_free_text() {
        assert_eq!(name_from("access_token"), "ACCESS_TOKEN");
        assert_eq!(name_from("X-Auth-Token"), "X_AUTH_TOKEN");
        assert_eq!(name_from("2fa code"), "V_2FA_CODE");
        assert_eq!(name_from("--"), "VALUE");
        assert!(
            is_name("BLOG_ID") && is_name("base-url") && is_name("api.key") && is_name("$guid")
        );
        assert!(!is_name("a b") && !is_name("") && !is_name("{x}") && !is_name("é"));
    }

    #[test]
    fn substitution_leaves_unknown_names() {
        let s = substitute("{{a}}:{{b}}", |n| (n == "a").then(|| "1".to_string()));
        assert_eq!(s, "1:{{b}}");
    }
}
