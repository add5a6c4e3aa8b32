//! Captures: values taken from a response (a JSON path, a header, a regular expression, a
//! cookie) into a variable for later steps. Pure functions over a [`Response`]; the engine
//! reads the response, this decides what it says.

use regex::bytes::Regex;

/// What the engine read of one response: enough for captures and checks.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    pub status: u16,
    /// Header names and values as received, in order.
    pub headers: &'a [(&'a str, &'a [u8])],
    /// The body, de-chunked (and decompressed when it was compressed); empty when the step
    /// needs no body.
    pub body: &'a [u8],
}

impl<'a> Response<'a> {
    /// The first value of a header, by name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// The value of a cookie the response sets (`Set-Cookie: name=value; ...`).
    pub fn set_cookie(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .find_map(|(_, v)| {
                let pair = v.split(|b| *b == b';').next()?;
                let eq = pair.iter().position(|b| *b == b'=')?;
                (trim(&pair[..eq]) == name.as_bytes()).then(|| trim(&pair[eq + 1..]))
            })
    }
}

pub(crate) fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// A JSON path, the subset scenarios use: `$`, `.name`, `['name']` and `[index]` (a negative
/// index counts from the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    pub text: String,
    parts: Vec<PathPart>,
}

/// One step of a [`JsonPath`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStep<'a> {
    Key(&'a str),
    Index(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PathPart {
    Key(String),
    Index(i64),
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let bad = |why: &str| {
            format!("`{text}` is not a JSON path this loader reads ({why}); write e.g. $.token, $.items[0].id or $['a key']")
        };
        let mut rest = text
            .trim()
            .strip_prefix('$')
            .ok_or_else(|| bad("it must start with $"))?;
        let mut parts = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let key = &after[..end];
                if key.is_empty() || key == "*" {
                    return Err(bad("an empty or wildcard key"));
                }
                parts.push(PathPart::Key(key.to_string()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or_else(|| bad("a `[` without `]`"))?;
                let inner = after[..end].trim();
                let quoted = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                match quoted {
                    Some(key) => parts.push(PathPart::Key(key.to_string())),
                    None => parts.push(PathPart::Index(
                        inner
                            .parse()
                            .map_err(|_| bad("an index must be a whole number"))?,
                    )),
                }
                rest = &after[end + 1..];
            } else {
                return Err(bad("expected `.` or `[`"));
            }
        }
        Ok(JsonPath {
            text: text.trim().to_string(),
            parts,
        })
    }

    /// The path's keys and indexes in order (`$` itself has none): what a gRPC step's
    /// paths are checked against the answer's message type with.
    pub fn steps(&self) -> impl Iterator<Item = PathStep<'_>> {
        self.parts.iter().map(|p| match p {
            PathPart::Key(k) => PathStep::Key(k),
            PathPart::Index(i) => PathStep::Index(*i),
        })
    }

    /// The value at this path, if there is one.
    pub fn find<'v>(&self, root: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        let mut at = root;
        for part in &self.parts {
            at = match (part, at) {
                (PathPart::Key(k), serde_json::Value::Object(m)) => m.get(k)?,
                (PathPart::Index(i), serde_json::Value::Array(a)) => {
                    let i = if *i < 0 { a.len() as i64 + i } else { *i };
                    a.get(usize::try_from(i).ok()?)?
                }
                _ => return None,
            };
        }
        Some(at)
    }
}

/// A value as a variable holds it: strings bare, anything else as JSON text.
pub fn json_to_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where a capture takes its value from.
#[derive(Debug, Clone)]
pub enum Source {
    Json(JsonPath),
    /// Lowercased name.
    Header(String),
    Regex(Regex),
    Cookie(String),
}

/// A compiled capture.
#[derive(Debug, Clone)]
pub struct Capture {
    /// The variable's name, for messages.
    pub var: String,
    /// Its slot in the virtual user's values.
    pub slot: usize,
    pub source: Source,
}

impl Capture {
    /// What the capture reads, as written (`$.token`, `header X-Token`...).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Json(p) => p.text.clone(),
            Source::Header(h) => format!("header {h}"),
            Source::Regex(r) => format!("regex {}", r.as_str()),
            Source::Cookie(c) => format!("cookie {c}"),
        }
    }

    /// Whether the body is needed (a JSON path or a regular expression).
    pub fn needs_body(&self) -> bool {
        matches!(self.source, Source::Json(_) | Source::Regex(_))
    }

    /// The captured value, or why there is none (the message a `check_failed` carries).
    /// `json` is the body parsed once for all of a step's captures and checks.
    pub fn take(
        &self,
        response: &Response,
        json: Option<&serde_json::Value>,
    ) -> Result<String, String> {
        let found = match &self.source {
            Source::Json(path) => json.and_then(|j| path.find(j)).map(json_to_text),
            Source::Header(name) => response
                .header(name)
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            Source::Regex(re) => re.captures(response.body).and_then(|c| {
                c.get(1)
                    .or_else(|| c.get(0))
                    .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
            }),
            Source::Cookie(name) => response
                .set_cookie(name)
                .map(|v| String::from_utf8_lossy(v).into_owned()),
        };
        found.ok_or_else(|| format!("capture {}: {} not found", self.var, self.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response<'a>(headers: &'a [(&'a str, &'a [u8])], body: &'a [u8]) -> Response<'a> {
        Response {
            status: 200,
            headers,
            body,
        }
    }

    fn capture(source: Source) -> Capture {
        Capture {
            var: "V".into(),
            slot: 0,
            source,
        }
    }

    #[test]
    fn json_paths_parse_and_find() {
        let doc: serde_json::Value = serde_json::from_str(
            r#"{"token":"t1","items":[{"id":7},{"id":8}],"a key":{"ok":true},"n":1.5}"#,
        )
        .unwrap();
        let find = |p: &str| JsonPath::parse(p).unwrap().find(&doc).map(json_to_text);
        assert_eq!(find("$.token").as_deref(), Some("t1"));
        assert_eq!(find("$.items[1].id").as_deref(), Some("8"));
        assert_eq!(find("$.items[-1].id").as_deref(), Some("8"));
        assert_eq!(find("$['a key'].ok").as_deref(), Some("true"));
        assert_eq!(find("$.n").as_deref(), Some("1.5"));
        assert_eq!(find("$.items[0]").as_deref(), Some(r#"{"id":7}"#));
        assert_eq!(find("$.missing"), None);
        assert_eq!(find("$.items[5]"), None);
        for bad in ["token", "$.", "$.items[x]", "$.a[0", "$..a", "$.*"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn captures_from_every_source() {
        let headers: &[(&str, &[u8])] = &[
            ("X-Token", b"h1"),
            ("Set-Cookie", b"theme=dark; Path=/"),
            ("set-cookie", b" session = s-42 ; HttpOnly"),
        ];
        let body = br#"<a id="item-9">{"token":"j1"}"#;
        let r = response(headers, body);
        let header = capture(Source::Header("x-token".into()));
        assert_eq!(header.take(&r, None).unwrap(), "h1");
        let cookie = capture(Source::Cookie("session".into()));
        assert_eq!(cookie.take(&r, None).unwrap(), "s-42");
        let group = capture(Source::Regex(Regex::new(r#"id="item-(\d+)""#).unwrap()));
        assert_eq!(group.take(&r, None).unwrap(), "9");
        let whole = capture(Source::Regex(Regex::new(r"item-\d").unwrap()));
        assert_eq!(whole.take(&r, None).unwrap(), "item-9");
        let json: serde_json::Value = serde_json::json!({"token": "j1"});
        let path = capture(Source::Json(JsonPath::parse("$.token").unwrap()));
        assert_eq!(path.take(&r, Some(&json)).unwrap(), "j1");
        assert!(path.needs_body() && !header.needs_body());
    }

    #[test]
    fn a_capture_that_finds_nothing_says_what_it_looked_for() {
        let r = response(&[], b"nothing here");
        let path = capture(Source::Json(JsonPath::parse("$.token").unwrap()));
        assert_eq!(
            path.take(&r, None).unwrap_err(),
            "capture V: $.token not found"
        );
        let header = capture(Source::Header("x-token".into()));
        assert_eq!(
            header.take(&r, None).unwrap_err(),
            "capture V: header x-token not found"
        );
    }
}
