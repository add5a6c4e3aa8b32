//! `{{NAME}}` templates, compiled once when the scenario loads.
//!
//! Variables whose value is known when the run starts (a default, or `--var`) are inlined
//! then, so a template that uses only those is a constant; only variables a capture or a
//! feeder sets stay as slots, filled from the virtual user's values when a request is built.
//! An unknown name is an error at load time, never an empty string at run time. `{{{{` is a
//! literal `{{`: the grammar is [`crate::placeholder`]'s, which the importers share. Rendering
//! never allocates beyond growing the buffer it writes into.

use crate::placeholder::{self, Piece};

/// How a variable's value is escaped where it is put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// As is (a raw body).
    None,
    /// In a header value or the request target: CR, LF and NUL dropped, so that a captured
    /// value can never split the request.
    Line,
    /// Inside a JSON string.
    Json,
    /// A form value (`application/x-www-form-urlencoded`).
    Form,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Lit(Vec<u8>),
    /// A variable's index in the virtual user's values.
    Var(usize, Escape),
}

/// A compiled template: literal bytes and variable slots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    segments: Vec<Segment>,
}

/// What a name means when a template is compiled.
pub enum Lookup<'a> {
    /// Known now: inlined.
    Static(&'a str),
    /// Set during the run (a capture, a feeder): a slot.
    Dynamic(usize),
    Unknown,
}

impl Template {
    /// A template of literal bytes only.
    pub fn literal(bytes: impl Into<Vec<u8>>) -> Template {
        let mut t = Template::default();
        t.push_lit(&bytes.into());
        t
    }

    /// Compiles `text`; `lookup` says what each name is. The error is a sentence about the
    /// first bad placeholder (the caller adds the step and the field).
    pub fn compile<'v>(
        text: &str,
        escape: Escape,
        lookup: &dyn Fn(&str) -> Lookup<'v>,
    ) -> Result<Template, String> {
        let mut t = Template::default();
        t.append(text, escape, lookup)?;
        Ok(t)
    }

    /// Compiles `text` onto the end of this template, with literal text escaped as `escape`
    /// says (a JSON body's strings are escaped whole, literals included).
    pub fn append<'v>(
        &mut self,
        text: &str,
        escape: Escape,
        lookup: &dyn Fn(&str) -> Lookup<'v>,
    ) -> Result<(), String> {
        for piece in placeholder::pieces(text)? {
            let name = match piece {
                Piece::Text(literal) => {
                    self.push_escaped(literal, escape);
                    continue;
                }
                Piece::Braces => {
                    self.push_escaped("{{", escape);
                    continue;
                }
                Piece::Var(name) => name,
            };
            if !placeholder::is_name(name) {
                return Err(format!(
                    "`{{{{{name}}}}}` is not a variable name (letters, digits, _ . - $)"
                ));
            }
            match lookup(name) {
                Lookup::Static(value) => self.push_escaped(value, escape),
                Lookup::Dynamic(index) => self.segments.push(Segment::Var(index, escape)),
                Lookup::Unknown => {
                    return Err(format!(
                        "unknown variable `{{{{{name}}}}}`; define it under [variables], or pass --var {name}=VALUE"
                    ))
                }
            }
        }
        Ok(())
    }

    /// Appends literal bytes, unescaped.
    pub fn push_lit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(Segment::Lit(last)) = self.segments.last_mut() {
            last.extend_from_slice(bytes);
        } else {
            self.segments.push(Segment::Lit(bytes.to_vec()));
        }
    }

    /// Appends another template.
    pub fn extend(&mut self, other: &Template) {
        for s in &other.segments {
            match s {
                Segment::Lit(b) => self.push_lit(b),
                Segment::Var(..) => self.segments.push(s.clone()),
            }
        }
    }

    fn push_escaped(&mut self, text: &str, escape: Escape) {
        let mut out = Vec::new();
        write_escaped(text.as_bytes(), escape, &mut out);
        self.push_lit(&out);
    }

    /// The leading literal bytes (empty when the template starts with a slot), and the rest.
    pub fn split_first_literal(&self) -> (Vec<u8>, Template) {
        match self.segments.split_first() {
            Some((Segment::Lit(b), rest)) => (
                b.clone(),
                Template {
                    segments: rest.to_vec(),
                },
            ),
            _ => (Vec::new(), self.clone()),
        }
    }

    /// True when the template has no variable slot: its bytes are known now.
    pub fn is_constant(&self) -> bool {
        self.segments.iter().all(|s| matches!(s, Segment::Lit(_)))
    }

    /// The bytes of a constant template (variables rendered empty otherwise).
    pub fn constant_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.render(&[], &mut out);
        out
    }

    /// The variable slots this template reads.
    pub fn variables(&self) -> impl Iterator<Item = usize> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Var(i, _) => Some(*i),
            Segment::Lit(_) => None,
        })
    }

    /// Appends the template with `values` filled in (a missing value renders empty).
    pub fn render(&self, values: &[String], out: &mut Vec<u8>) {
        for s in &self.segments {
            match s {
                Segment::Lit(b) => out.extend_from_slice(b),
                Segment::Var(i, escape) => {
                    let v = values.get(*i).map_or("", String::as_str);
                    write_escaped(v.as_bytes(), *escape, out);
                }
            }
        }
    }

    /// The rendered length, without rendering.
    pub fn rendered_len(&self, values: &[String]) -> usize {
        let mut scratch = Vec::new();
        let mut n = 0;
        for s in &self.segments {
            match s {
                Segment::Lit(b) => n += b.len(),
                Segment::Var(i, Escape::None) => n += values.get(*i).map_or(0, String::len),
                Segment::Var(i, escape) => {
                    scratch.clear();
                    let v = values.get(*i).map_or("", String::as_str);
                    write_escaped(v.as_bytes(), *escape, &mut scratch);
                    n += scratch.len();
                }
            }
        }
        n
    }
}

fn write_escaped(bytes: &[u8], escape: Escape, out: &mut Vec<u8>) {
    match escape {
        Escape::None => out.extend_from_slice(bytes),
        Escape::Line => out.extend(
            bytes
                .iter()
                .copied()
                .filter(|b| !matches!(b, b'\r' | b'\n' | 0)),
        ),
        Escape::Json => {
            let text = String::from_utf8_lossy(bytes);
            let quoted = serde_json::to_string(&*text).expect("a string always serialises");
            out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
        }
        Escape::Form => {
            for piece in form_urlencoded::byte_serialize(bytes) {
                out.extend_from_slice(piece.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Lookup<'static> {
        match name {
            "URL" => Lookup::Static("http://127.0.0.1:8080"),
            "ID" => Lookup::Static("001"),
            "TOKEN" => Lookup::Dynamic(0),
            "USER" => Lookup::Dynamic(1),
            _ => Lookup::Unknown,
        }
    }

    fn render(t: &Template, values: &[&str]) -> String {
        let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        t.render(&values, &mut out);
        assert_eq!(out.len(), t.rendered_len(&values));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn static_variables_are_inlined_and_dynamic_ones_are_slots() {
        let t = Template::compile("{{URL}}/blog/{{ ID }}", Escape::Line, &lookup).unwrap();
        assert!(t.is_constant());
        assert_eq!(render(&t, &[]), "http://127.0.0.1:8080/blog/001");

        let t = Template::compile("Bearer {{TOKEN}} for {{USER}}", Escape::Line, &lookup).unwrap();
        assert!(!t.is_constant());
        assert_eq!(t.variables().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(render(&t, &["abc", "ann"]), "Bearer abc for ann");
    }

    #[test]
    fn quadruple_braces_are_a_literal_and_bad_placeholders_are_errors() {
        let t = Template::compile("a {{{{x}} b", Escape::None, &lookup).unwrap();
        assert_eq!(render(&t, &[]), "a {{x}} b");
        for (text, wanted) in [
            ("{{NOPE}}", "unknown variable `{{NOPE}}`"),
            ("x {{URL", "without a closing"),
            ("{{}}", "not a variable name"),
            ("{{a b}}", "not a variable name"),
        ] {
            let err = Template::compile(text, Escape::None, &lookup).unwrap_err();
            assert!(err.contains(wanted), "{text}: {err}");
        }
    }

    #[test]
    fn values_are_escaped_for_where_they_go() {
        let line = Template::compile("{{TOKEN}}", Escape::Line, &lookup).unwrap();
        assert_eq!(render(&line, &["a\r\nX-Evil: 1"]), "aX-Evil: 1");
        let json = Template::compile("say \"{{TOKEN}}\"", Escape::Json, &lookup).unwrap();
        assert_eq!(render(&json, &["a\"b\n"]), "say \\\"a\\\"b\\n\\\"");
        let form = Template::compile("{{TOKEN}}", Escape::Form, &lookup).unwrap();
        assert_eq!(render(&form, &["a b&c=d"]), "a+b%26c%3Dd");
    }
}
