//! Secrets a recording carries: cookies the browser had before the recording started, and
//! `Authorization` and other secret-looking headers (tokens, API keys, sessions). Unless the
//! user keeps them (`--keep-secrets`), each recorded value becomes a variable whose default
//! is empty, with a note saying `--var NAME=...`: a scenario file is shared and committed,
//! and a recorded session must not travel with it. Values already turned into captures (a
//! login's token) are left alone: the replay gets its own.

use crate::scenario::Request;
use crate::template;
use crate::Note;

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

/// A secret value's variable, shared by every request that sent the same value.
struct Secret {
    value: String,
    var: String,
}

#[derive(Default)]
pub struct Secrets {
    found: Vec<Secret>,
    /// New variables (all with empty defaults), in order.
    pub variables: Vec<String>,
    pub notes: Vec<Note>,
}

impl Secrets {
    fn var_for(&mut self, value: &str, base: &str, what: &str, taken: &mut Vec<String>) -> String {
        if let Some(s) = self.found.iter().find(|s| s.value == value) {
            return s.var.clone();
        }
        let var = crate::scenario::unique_var(base, taken);
        taken.push(var.clone());
        self.found.push(Secret {
            value: value.to_string(),
            var: var.clone(),
        });
        self.variables.push(var.clone());
        self.notes.push(Note::scenario(format!(
            "{what}: the recorded value was taken out; give it with --var {var}=... (or import with --keep-secrets)"
        )));
        var
    }

    /// Replaces the secrets in one request's headers; `jar` holds the cookies that earlier
    /// responses of the scenario set (the cookie jar sends those; they are dropped here).
    pub fn scrub(
        &mut self,
        r: &mut Request,
        jar: &[(String, String)],
        keep: bool,
        taken: &mut Vec<String>,
    ) {
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
    }

    fn cookies(
        &mut self,
        header: &str,
        jar: &[(String, String)],
        keep: bool,
        taken: &mut Vec<String>,
    ) -> String {
        let mut out = Vec::new();
        for pair in header.split(';') {
            let Some((n, v)) = pair.split_once('=') else {
                continue;
            };
            let (n, v) = (n.trim(), v.trim());
            if jar.iter().any(|(jn, jv)| jn == n && jv == v) {
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
