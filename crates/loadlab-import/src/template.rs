//! `{{NAME}}` in templated strings, as the scenario format defines them: `{{NAME}}` is the
//! variable `NAME`, `{{{{` is a literal `{{`. Only reading and escaping here; substitution is
//! the scenario engine's job (except [`substitute`], which an importer uses to compute a value
//! it cannot leave templated, such as a basic-auth header).

/// A variable name the scenario loader accepts: letters, digits, `_`, `.`, `-` and `$`
/// (Postman's names are usually of this kind; others are refused with the fix).
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'))
}

/// One piece of a templated string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// `{{{{`: a literal `{{`.
    Braces,
    Var(&'a str),
}

/// Splits a templated string; an unclosed `{{` is an error (with the fix).
pub fn pieces(s: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("{{") {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let after = &rest[at + 2..];
        if let Some(more) = after.strip_prefix("{{") {
            out.push(Piece::Braces);
            rest = more;
            continue;
        }
        let end = after.find("}}").ok_or_else(|| {
            format!("an unclosed `{{{{` in {s:?} (write `{{{{{{{{` for a literal `{{{{`)")
        })?;
        out.push(Piece::Var(&after[..end]));
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// The variable names a templated string uses, in order.
pub fn names(s: &str) -> Result<Vec<&str>, String> {
    Ok(pieces(s)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name),
            _ => None,
        })
        .collect())
}

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
    fn pieces_split_variables_and_literal_braces() {
        assert_eq!(
            pieces("https://{{URL}}/a{{{{b").unwrap(),
            vec![
                Piece::Text("https://"),
                Piece::Var("URL"),
                Piece::Text("/a"),
                Piece::Braces,
                Piece::Text("b"),
            ]
        );
        assert_eq!(names("{{A}}{{B}}x").unwrap(), vec!["A", "B"]);
        assert!(pieces("{{A").unwrap_err().contains("unclosed"));
    }

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
