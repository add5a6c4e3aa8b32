//! Secrets a recording carries: cookies the browser had before the recording started,
//! `Authorization` and other secret-looking headers (tokens, API keys, sessions), and fields
//! of a JSON or form body and query parameters named like secrets (a login's password, an
//! `access_token` in the URL). Unless the
//! user keeps them (`--keep-secrets`), each recorded value becomes a variable whose default
//! is empty, with a note saying `--var NAME=...`: a scenario file is shared and committed,
//! and a recorded session must not travel with it. Values already turned into captures (a
//! login's token) are left alone: the replay gets its own.

use crate::scenario::{Body, Request, UniqueNames};
use crate::template;
use crate::Note;
use std::collections::{HashMap, HashSet};

/// Header names whose values are secrets, matched case-insensitively as substrings.
const SECRET_WORDS: [&str; 9] = [
    "authorization",
    "token",
    "api-key",
    "apikey",
    "api_key",
    "secret",
    "password",
    "session",
    "auth",
];

/// Body fields and query parameters whose values are secrets: names that, lowercased and
/// without `-`, `_` and `.`, contain one of these (so `password`, `client_secret`,
/// `refresh_token`, `X-Api-Key`), or are one of [`SECRET_FIELDS_EXACT`]. Narrower than the
/// header words: a body's `author` or `session_count` is data, not a credential.
const SECRET_FIELD_WORDS: [&str; 9] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
];
const SECRET_FIELDS_EXACT: [&str; 4] = ["pwd", "pass", "sessionid", "sid"];

fn secret_field(name: &str) -> bool {
    let plain: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_FIELD_WORDS.iter().any(|w| plain.contains(w))
        || SECRET_FIELDS_EXACT.contains(&plain.as_str())
}

/// A recorded value worth taking out: not empty, and not already a template (a capture).
fn recorded(value: &str) -> bool {
    !value.is_empty() && !value.contains("{{")
}

/// The cookies earlier responses set, as (name, value): the cookie jar sends those.
pub type Jar = HashSet<(String, String)>;

#[derive(Default)]
pub struct Secrets {
    /// Each secret value's variable, shared by every request that sent the same value (a
    /// map: a recording can hold a new token in each of 100,000 requests).
    found: HashMap<String, String>,
    /// New variables (all with empty defaults), in order.
    pub variables: Vec<String>,
    pub notes: Vec<Note>,
}

impl Secrets {
    fn var_for(&mut self, value: &str, base: &str, what: &str, taken: &mut UniqueNames) -> String {
        if let Some(var) = self.found.get(value) {
            return var.clone();
        }
        let var = taken.give(base);
        self.found.insert(value.to_string(), var.clone());
        self.variables.push(var.clone());
        self.notes.push(Note::scenario(format!(
            "{what}: the recorded value was taken out; give it with --var {var}=... (or import with --keep-secrets)"
        )));
        var
    }

    /// Replaces the secrets in one request's headers; `jar` holds the cookies that earlier
    /// responses of the scenario set (the cookie jar sends those; they are dropped here).
    pub fn scrub(&mut self, r: &mut Request, jar: &Jar, keep: bool, taken: &mut UniqueNames) {
        let mut headers = std::mem::take(&mut r.headers);
        for (name, value) in headers.iter_mut() {
            let lower = name.to_ascii_lowercase();
            if lower == "cookie" {
                *value = self.cookies(value, jar, keep, taken);
                continue;
            }
            if keep || !SECRET_WORDS.iter().any(|w| lower.contains(w)) || value.contains("{{") {
                continue;
            }
            let base = template::name_from(name);
            // Keep the scheme ("Bearer ") visible: it says what to give.
            match value.split_once(' ') {
                Some((scheme, credentials))
                    if lower.ends_with("authorization") && !credentials.trim().is_empty() =>
                {
                    let var = self.var_for(
                        credentials.trim(),
                        &base,
                        &format!("header {name} ({scheme})"),
                        taken,
                    );
                    *value = format!("{scheme} {{{{{var}}}}}");
                }
                _ => {
                    let var = self.var_for(value, &base, &format!("header {name}"), taken);
                    *value = format!("{{{{{var}}}}}");
                }
            }
        }
        headers.retain(|(_, v)| !v.is_empty());
        r.headers = headers;
        if !keep {
            self.scrub_query(r, taken);
            self.scrub_body(r, taken);
        }
    }

    /// Query parameters named like secrets (`?access_token=...`).
    fn scrub_query(&mut self, r: &mut Request, taken: &mut UniqueNames) {
        let Some((path, query)) = r.url.split_once('?') else {
            return;
        };
        let (query, fragment) = match query.split_once('#') {
            Some((q, f)) => (q, Some(f)),
            None => (query, None),
        };
        let mut changed = false;
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, value)) if secret_field(name) && recorded(value) => {
                    let var = self.var_for(
                        value,
                        &template::name_from(name),
                        &format!("query parameter {name}"),
                        taken,
                    );
                    changed = true;
                    format!("{name}={{{{{var}}}}}")
                }
                _ => pair.to_string(),
            })
            .collect();
        if changed {
            let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
            r.url = format!("{path}?{}{fragment}", pairs.join("&"));
        }
    }

    /// Form fields and JSON members named like secrets (a login's `password`).
    fn scrub_body(&mut self, r: &mut Request, taken: &mut UniqueNames) {
        match &mut r.body {
            Some(Body::Form(fields)) => {
                for (name, value) in fields.iter_mut() {
                    if secret_field(name) && recorded(value) {
                        let base = template::name_from(name);
                        let var = self.var_for(value, &base, &format!("body field {name}"), taken);
                        *value = format!("{{{{{var}}}}}");
                    }
                }
            }
            Some(Body::Raw(text)) => {
                let Ok(mut json) = serde_json::from_str::<serde_json::Value>(text) else {
                    return;
                };
                let mut found = Vec::new();
                secret_members(&mut json, &mut found);
                if found.is_empty() {
                    return;
                }
                // Each value's JSON string replaced where it stands, so the body keeps its
                // layout and member order; if the recording wrote a value another way (an
                // escape serde would not use), the body is written anew instead.
                let vars: Vec<(String, String)> = found
                    .into_iter()
                    .map(|(name, value)| {
                        let base = template::name_from(&name);
                        let var = self.var_for(&value, &base, &format!("body field {name}"), taken);
                        (value, var)
                    })
                    .collect();
                let quoted = |v: &str| serde_json::Value::String(v.to_string()).to_string();
                let mut out = text.clone();
                for (value, var) in &vars {
                    out = out.replace(&quoted(value), &format!("\"{{{{{var}}}}}\""));
                }
                // Judged on the document, not the text: a value written with an escape is
                // not found by its quoted form, and would still be there.
                let gone = serde_json::from_str::<serde_json::Value>(&out)
                    .is_ok_and(|doc| vars.iter().all(|(v, _)| !holds_string(&doc, v)));
                if gone {
                    *text = out;
                } else {
                    for (value, var) in &vars {
                        replace_string(&mut json, value, &format!("{{{{{var}}}}}"));
                    }
                    *text = json.to_string();
                }
            }
            _ => {}
        }
    }

    fn cookies(&mut self, header: &str, jar: &Jar, keep: bool, taken: &mut UniqueNames) -> String {
        let mut out = Vec::new();
        for pair in header.split(';') {
            let Some((n, v)) = pair.split_once('=') else {
                continue;
            };
            let (n, v) = (n.trim(), v.trim());
            if jar.contains(&(n.to_string(), v.to_string())) {
                continue;
            }
            if keep || v.contains("{{") {
                out.push(format!("{n}={v}"));
            } else {
                let var = self.var_for(
                    v,
                    &format!("COOKIE_{}", template::name_from(n)),
                    &format!("cookie {n}"),
                    taken,
                );
                out.push(format!("{n}={{{{{var}}}}}"));
            }
        }
        out.join("; ")
    }
}

/// String members named like secrets, anywhere in a JSON document: (name, value).
fn secret_members(json: &mut serde_json::Value, found: &mut Vec<(String, String)>) {
    match json {
        serde_json::Value::Object(members) => {
            for (name, value) in members.iter_mut() {
                match value {
                    serde_json::Value::String(v) if secret_field(name) && recorded(v) => {
                        if !found.iter().any(|(_, f)| f == v) {
                            found.push((name.clone(), v.clone()));
                        }
                    }
                    other => secret_members(other, found),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                secret_members(item, found);
            }
        }
        _ => {}
    }
}

/// Whether a JSON document holds a string equal to `value` anywhere.
fn holds_string(json: &serde_json::Value, value: &str) -> bool {
    match json {
        serde_json::Value::String(s) => s == value,
        serde_json::Value::Object(members) => members.values().any(|v| holds_string(v, value)),
        serde_json::Value::Array(items) => items.iter().any(|v| holds_string(v, value)),
        _ => false,
    }
}

/// Replaces every string equal to `value` in a JSON document.
fn replace_string(json: &mut serde_json::Value, value: &str, with: &str) {
    match json {
        serde_json::Value::String(s) if s == value => *s = with.to_string(),
        serde_json::Value::Object(members) => {
            for v in members.values_mut() {
                replace_string(v, value, with);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                replace_string(v, value, with);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::secret_field;

    #[test]
    fn fields_named_like_secrets_and_fields_that_are_data() {
        for name in [
            "password",
            "newPassword",
            "client_secret",
            "refresh_token",
            "access-token",
            "X-Api-Key",
            "api.key",
            "pwd",
            "sessionId",
        ] {
            assert!(secret_field(name), "{name}");
        }
        for name in [
            "author",
            "username",
            "session_count",
            "display_name",
            "passenger",
        ] {
            assert!(!secret_field(name), "{name}");
        }
    }
}
