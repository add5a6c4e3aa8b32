//! The `{{NAME}}` grammar, the one reading of a templated string: the scenario loader compiles
//! with it ([`crate::template`]) and the importers write and check with it (loadlab-import's
//! `template`), so a file an importer writes reads the same way when it loads.
//!
//! `{{NAME}}` is the variable `NAME` (blanks around the name ignored: `{{ NAME }}`); `{{{{` is
//! a literal `{{`; a `}}` outside a placeholder is text. A placeholder ends at the first `}}`,
//! so `{{a{{b}}` holds `a{{b`, which [`is_name`] refuses. Only splitting here: whether a name
//! is known, and what it becomes, is the caller's business.

/// One piece of a templated string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// `{{{{`: a literal `{{`.
    Braces,
    /// What stood between `{{` and `}}`, trimmed; not checked (see [`is_name`]).
    Var(&'a str),
}

/// Splits a templated string; a `{{` without its `}}` is an error, a sentence with the fix.
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
        let Some(end) = after.find("}}") else {
            return Err(format!(
                "`{{{{` without a closing `}}}}` in `{s}`; write {{{{NAME}}}}, or {{{{{{{{ for a literal {{{{"
            ));
        };
        out.push(Piece::Var(after[..end].trim()));
        rest = &after[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// The variable names a templated string uses, in order (checked or not: see [`is_name`]).
pub fn names(s: &str) -> Result<Vec<&str>, String> {
    Ok(pieces(s)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name),
            _ => None,
        })
        .collect())
}

/// A variable name the format accepts: letters, digits, `_`, `.`, `-` and `$`, at least one.
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '$'))
}

#[cfg(test)]
mod tests {
    use super::Piece::*;
    use super::*;

    #[test]
    fn known_inputs_split_as_the_grammar_says() {
        for (text, want) in [
            ("", vec![]),
            ("plain", vec![Text("plain")]),
            ("{{A}}", vec![Var("A")]),
            ("{{ A }}", vec![Var("A")]),
            ("a{{B}}c", vec![Text("a"), Var("B"), Text("c")]),
            ("{{A}}{{B}}", vec![Var("A"), Var("B")]),
            // Escapes: `{{{{` is a literal `{{`, whatever follows it.
            ("{{{{", vec![Braces]),
            ("a{{{{x}}", vec![Text("a"), Braces, Text("x}}")]),
            ("{{{{{{A}}", vec![Braces, Var("A")]),
            ("}} {", vec![Text("}} {")]),
            // Empty and nested: split as read, refused by is_name.
            ("{{}}", vec![Var("")]),
            ("{{  }}", vec![Var("")]),
            ("{{a{{b}}c}}", vec![Var("a{{b"), Text("c}}")]),
            ("{{{a}}}", vec![Var("{a"), Text("}")]),
        ] {
            assert_eq!(pieces(text).unwrap(), want, "{text:?}");
        }
    }

    #[test]
    fn an_unterminated_placeholder_is_an_error_with_the_fix() {
        for text in ["{{A", "x {{", "{{A}} {{B", "{{{{ {{"] {
            let err = pieces(text).unwrap_err();
            assert!(err.contains("without a closing `}}`"), "{text}: {err}");
            assert!(err.contains("{{{{ for a literal {{"), "{text}: {err}");
        }
    }

    #[test]
    fn names_are_letters_digits_and_four_signs() {
        assert!(["A", "base-url", "api.key", "$guid", "BLOG_ID", "x1"]
            .iter()
            .all(|n| is_name(n)));
        assert!(!["", "a b", "{x}", "a{{b", "é", "a}"]
            .iter()
            .any(|n| is_name(n)));
        assert_eq!(names("{{A}}{{{{B}}{{ C }}").unwrap(), vec!["A", "C"]);
    }
}
