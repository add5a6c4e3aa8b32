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

use crate::scenario::{templated_fields, Body, Capture, CaptureSource, Part, Request, UniqueNames};
use crate::template;
use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;
use std::collections::HashMap;

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
/// says whether step i may carry captures (a page of several requests cannot). `names` holds
/// the variable names already in use; the new ones are added. Returns the captures per step.
///
/// Each request is compared only with the known values it holds, found by one pass over
/// every request ([`Occurrences`]), not with every value known so far; and "was this value
/// sent before?" looks only at the requests that held it as recorded, not at all the text
/// sent so far (both grew with the recording: 100,000 entries took minutes, issue 46 item 6).
/// The outcome is the one the plain search gives: a request's known values are tried
/// longest first (then in the order they became known), each checked again on the request
/// as the longer ones left it.
pub fn correlate(
    entries: &[&Entry],
    requests: &mut [Request],
    eligible: &[bool],
    names: &mut UniqueNames,
) -> Result<Correlated, String> {
    let offered: Vec<Vec<Candidate>> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if eligible[i] {
                candidates(e, i)
            } else {
                Vec::new()
            }
        })
        .collect();
    let found = Occurrences::find(&offered, requests)?;
    let mut captures: Vec<Vec<Capture>> = vec![Vec::new(); requests.len()];
    // Each value's standing, by its id in `found`.
    let mut standing: Vec<Standing> = vec![Standing::Unseen; found.values()];
    // The values that became known, in that order; their variable once a request used them.
    let mut known: Vec<(Candidate, Option<String>)> = Vec::new();
    let mut tried = 0u64;
    for i in 0..requests.len() {
        let mut hits: Vec<usize> = found
            .used_by(i)
            .iter()
            .filter_map(|&v| match standing[v as usize] {
                Standing::Known(k) => Some(k),
                _ => None,
            })
            .collect();
        // Longest first, so that a value containing another is replaced whole.
        hits.sort_by_key(|&k| (std::cmp::Reverse(known[k].0.value.len()), k));
        for k in hits {
            tried += 1;
            let (cand, assigned) = &mut known[k];
            let encoded = percent_encode(&cand.value);
            if !uses(&requests[i], &cand.value) && !uses(&requests[i], &encoded) {
                continue;
            }
            let var = match assigned {
                Some(var) => var.clone(),
                None => {
                    let var = names.give(&cand.name);
                    *assigned = Some(var.clone());
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
        for c in &offered[i] {
            let v = found.id(&c.value);
            if standing[v] != Standing::Unseen {
                continue;
            }
            // A value a request had already sent (a name typed into a form and echoed back)
            // is not one the server made up; once sent, it stays sent.
            if found
                .sent_in(v)
                .iter()
                .take_while(|&&j| j as usize <= i)
                .any(|&j| {
                    tried += 1;
                    sends(&requests[j as usize], &c.value)
                })
            {
                standing[v] = Standing::SentBefore;
                continue;
            }
            standing[v] = Standing::Known(known.len());
            known.push((c.clone(), None));
        }
    }
    Ok(Correlated { captures, tried })
}

/// What [`correlate`] made.
#[derive(Debug)]
pub struct Correlated {
    /// The captures each step gets.
    pub captures: Vec<Vec<Capture>>,
    /// Requests searched for a value: once per known value a request holds, and once per
    /// earlier request that held a new value as recorded. Only the tests read it (their
    /// bound on work).
    #[cfg_attr(not(test), allow(dead_code))]
    pub tried: u64,
}

/// What became of a value a response gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Unseen,
    /// A request had sent it before the response gave it: never correlated.
    SentBefore,
    /// Known from then on: `known[k]`.
    Known(usize),
}

/// Where the values responses gave appear in the requests as recorded: one Aho-Corasick
/// pass over every field of every request, each value looked for as it is and
/// percent-encoded. A rewrite only takes a value's text out (for `{{VAR}}`), so a value not
/// found in a request here is not in it later either (short of one that begins with `}` or
/// ends with `{` meeting a rewritten neighbour); where one is found, the caller checks the
/// request as it is then.
struct Occurrences {
    /// Each distinct value's id.
    ids: HashMap<String, usize>,
    /// Per request: the values in its fields other than `Cookie` (as they are or
    /// encoded), ascending, once each: what [`uses`] may find.
    used: Vec<Vec<u32>>,
    /// Per value: the requests that sent it as it is in any field, ascending: the only
    /// ones worth reading to tell whether it was sent before a response gave it.
    sent: Vec<Vec<u32>>,
}

impl Occurrences {
    fn find(offered: &[Vec<Candidate>], requests: &[Request]) -> Result<Occurrences, String> {
        let mut ids: HashMap<String, usize> = HashMap::new();
        for c in offered.iter().flatten() {
            let next = ids.len();
            ids.entry(c.value.clone()).or_insert(next);
        }
        let mut found = Occurrences {
            used: vec![Vec::new(); requests.len()],
            sent: vec![Vec::new(); ids.len()],
            ids,
        };
        if found.ids.is_empty() {
            return Ok(found);
        }
        // Each pattern's owners: (value id, whether the pattern is the value as it is). A
        // value's encoding can be another value as it is.
        let mut patterns: Vec<String> = Vec::new();
        let mut owners: Vec<Vec<(u32, bool)>> = Vec::new();
        let mut pattern_ids: HashMap<String, usize> = HashMap::new();
        let mut own = |text: String, value: usize, raw: bool| {
            let p = *pattern_ids.entry(text.clone()).or_insert_with(|| {
                patterns.push(text);
                owners.push(Vec::new());
                patterns.len() - 1
            });
            owners[p].push((value as u32, raw));
        };
        for (value, &id) in &found.ids {
            let encoded = percent_encode(value);
            if encoded != *value {
                own(encoded, id, false);
            }
            own(value.clone(), id, true);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .map_err(|e| format!("too many values to correlate ({e})"))?;
        for (i, r) in requests.iter().enumerate() {
            let used = &mut found.used[i];
            for (field, text) in templated_fields(r) {
                let cookie = field.eq_ignore_ascii_case("headers.cookie");
                for m in automaton.find_overlapping_iter(text) {
                    for &(value, raw) in &owners[m.pattern().as_usize()] {
                        if !cookie {
                            used.push(value);
                        }
                        let sent = &mut found.sent[value as usize];
                        if raw && sent.last() != Some(&(i as u32)) {
                            sent.push(i as u32);
                        }
                    }
                }
            }
            used.sort_unstable();
            used.dedup();
        }
        Ok(found)
    }

    fn values(&self) -> usize {
        self.ids.len()
    }

    fn id(&self, value: &str) -> usize {
        self.ids[value]
    }

    fn used_by(&self, request: usize) -> &[u32] {
        &self.used[request]
    }

    fn sent_in(&self, value: usize) -> &[u32] {
        &self.sent[value]
    }
}

/// Whether any field of the request (its Cookie header too) holds `value`.
fn sends(r: &Request, value: &str) -> bool {
    templated_fields(r)
        .iter()
        .any(|(_, text)| text.contains(value))
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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod work_tests;
