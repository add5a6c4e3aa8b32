//! Correlation: a value that one response gave (a JSON field, a header, a cookie) and a later
//! request sent back (in its URL, a header or its body) becomes a capture on the first step
//! and a `{{VAR}}` in the later ones, so the replay sends each virtual user's own value
//! instead of the recorded one.
//!
//! Only values that look generated are candidates (at least 8 characters, no spaces, and a
//! digit or at least 16 characters: tokens, ids, UUIDs), and only if no request had sent
//! them before the response gave them (a user name typed into a form and echoed back is
//! not a correlation). Cookies that the cookie jar sends back are not rewritten: every
//! virtual user has its own jar.

use crate::scenario::{templated_fields, Body, Capture, CaptureSource, Part, Request};
use crate::template;
use serde_json::Value;

use super::entry::Entry;

/// A value a response gave, and where a capture would find it.
#[derive(Debug, Clone)]
struct Candidate {
    value: String,
    /// The step (index into the requests) whose response gave it.
    step: usize,
    source: CaptureSource,
    /// The variable name it would get.
    name: String,
}

fn looks_generated(v: &str) -> bool {
    (8..=4096).contains(&v.len())
        && !v.chars().any(char::is_whitespace)
        && !v.contains("{{")
        && !v.contains("}}")
        && (v.chars().any(|c| c.is_ascii_digit()) || v.len() >= 16)
}

struct Found {
    value: String,
    name: String,
    key: String,
    path: Option<String>,
}

/// String (and long number) leaves of a JSON document: (value, a name for its variable, the
/// path the format reads, `$.a.b[0].c`, or `None` when a key is not a plain name).
fn json_candidates(v: &Value, path: &str, plain: bool, names: (&str, &str), out: &mut Vec<Found>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let simple =
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                json_candidates(
                    child,
                    &format!("{path}.{k}"),
                    plain && simple,
                    (names.1, k),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                json_candidates(child, &format!("{path}[{i}]"), plain, names, out);
            }
        }
        Value::String(_) | Value::Number(_) => {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if looks_generated(&text) {
                // "id" says little alone: `$.user.id` is USER_ID.
                let (parent, key) = names;
                let generic = ["id", "uuid", "key", "value", "code"]
                    .contains(&key.to_ascii_lowercase().as_str());
                let name = if generic && !parent.is_empty() {
                    format!("{parent}_{key}")
                } else {
                    key.to_string()
                };
                out.push(Found {
                    value: text,
                    name,
                    key: key.to_string(),
                    path: plain.then(|| path.to_string()),
                });
            }
        }
        _ => {}
    }
}

/// Headers that describe the response rather than hand the client a value to send back.
const DESCRIPTIVE: [&str; 16] = [
    "date",
    "content-type",
    "content-length",
    "server",
    "cache-control",
    "expires",
    "last-modified",
    "etag",
    "vary",
    "age",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "strict-transport-security",
    "set-cookie",
    "alt-svc",
];

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn candidates(entry: &Entry, step: usize) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(text) = &entry.response_text {
        if let Ok(json) = serde_json::from_str::<Value>(text) {
            let mut found = Vec::new();
            json_candidates(&json, "$", true, ("", "value"), &mut found);
            for f in found {
                let source = match f.path {
                    Some(p) => CaptureSource::Json(p),
                    None => CaptureSource::Regex(format!(
                        "\"{}\"\\s*:\\s*\"?([^\",}}]*)",
                        regex_escape(&f.key)
                    )),
                };
                out.push(Candidate {
                    value: f.value,
                    step,
                    source,
                    name: template::name_from(&f.name),
                });
            }
        }
    }
    for (name, value) in &entry.response_headers {
        if !DESCRIPTIVE.contains(&name.to_ascii_lowercase().as_str()) && looks_generated(value) {
            out.push(Candidate {
                value: value.clone(),
                step,
                source: CaptureSource::Header(name.clone()),
                name: template::name_from(name),
            });
        }
    }
    for (name, value) in &entry.set_cookies {
        if looks_generated(value) {
            out.push(Candidate {
                value: value.clone(),
                step,
                source: CaptureSource::Cookie(name.clone()),
                name: template::name_from(name),
            });
        }
    }
    out
}

/// Percent-encoding of everything but unreserved characters, as forms and query strings carry
/// a value.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Rewrites every later use of an earlier response's value into `{{VAR}}`. `eligible[i]`
/// says whether step i may carry captures (a page of several requests cannot). `taken` holds
/// the variable names already in use; the new ones are added. Returns the captures per step.
pub fn correlate(
    entries: &[&Entry],
    requests: &mut [Request],
    eligible: &[bool],
    taken: &mut Vec<String>,
) -> Vec<Vec<Capture>> {
    let mut captures: Vec<Vec<Capture>> = vec![Vec::new(); requests.len()];
    let mut known: Vec<Candidate> = Vec::new();
    // (value, variable) of candidates already turned into captures.
    let mut assigned: Vec<(String, String)> = Vec::new();
    let mut sent_so_far = String::new();
    for i in 0..requests.len() {
        // Longest first, so that a value containing another is replaced whole.
        known.sort_by_key(|c| std::cmp::Reverse(c.value.len()));
        for cand in &known {
            let encoded = percent_encode(&cand.value);
            if !uses(&requests[i], &cand.value) && !uses(&requests[i], &encoded) {
                continue;
            }
            let var = match assigned.iter().find(|(v, _)| *v == cand.value) {
                Some((_, var)) => var.clone(),
                None => {
                    let var = crate::scenario::unique_var(&cand.name, taken);
                    taken.push(var.clone());
                    assigned.push((cand.value.clone(), var.clone()));
                    captures[cand.step].push(Capture {
                        var: var.clone(),
                        source: cand.source.clone(),
                    });
                    var
                }
            };
            let with = format!("{{{{{var}}}}}");
            replace_in(&mut requests[i], &cand.value, &with);
            if encoded != cand.value {
                replace_in(&mut requests[i], &encoded, &with);
            }
        }
        for (_, text) in templated_fields(&requests[i]) {
            sent_so_far.push_str(text);
            sent_so_far.push('\n');
        }
        if eligible[i] {
            for c in candidates(entries[i], i) {
                let seen = known.iter().any(|k| k.value == c.value);
                if !seen && !sent_so_far.contains(&c.value) {
                    known.push(c);
                }
            }
        }
    }
    captures
}

fn uses(r: &Request, value: &str) -> bool {
    templated_fields(r)
        .iter()
        .any(|(field, text)| !field.eq_ignore_ascii_case("headers.cookie") && text.contains(value))
}

fn replace_in(r: &mut Request, value: &str, with: &str) {
    r.url = r.url.replace(value, with);
    for (name, v) in r.headers.iter_mut() {
        if !name.eq_ignore_ascii_case("cookie") {
            *v = v.replace(value, with);
        }
    }
    match &mut r.body {
        Some(Body::Raw(text)) => *text = text.replace(value, with),
        Some(Body::Form(fields)) => {
            for (_, v) in fields.iter_mut() {
                *v = v.replace(value, with);
            }
        }
        Some(Body::Multipart(parts)) => {
            for (_, p) in parts.iter_mut() {
                if let Part::Text(v) = p {
                    *v = v.replace(value, with);
                }
            }
        }
        Some(Body::File(_)) | None => {}
    }
}
