//! Postman's auth helpers (basic, bearer, API key) as the headers or query parameters they
//! send, inherited as Postman does: a request without `auth` (or with `"type": "inherit"`)
//! takes its folder's, a folder its parent's, up to the collection's; `"type": "noauth"`
//! stops the inheritance. Other types (OAuth, digest, AWS, ...) compute signatures per
//! request and are reported, not imitated.

use super::text_of;
use crate::scenario::{Request, Scenario};
use crate::template;
use crate::Note;
use base64::Engine as _;
use serde_json::Value;

/// The auth in force at some level: `None` inherits, `Some(Null)` is "no auth".
pub fn resolve<'a>(own: Option<&'a Value>, inherited: Option<&'a Value>) -> Option<&'a Value> {
    match own {
        None | Some(Value::Null) => inherited,
        Some(v) if v.get("type").and_then(Value::as_str) == Some("inherit") => inherited,
        Some(v) => Some(v),
    }
}

/// One parameter of an auth block: v2.1 keeps them as `[{key, value}]`, v2.0 as an object.
fn param(auth: &Value, kind: &str, name: &str) -> Option<String> {
    match auth.get(kind)? {
        Value::Array(entries) => entries
            .iter()
            .find(|e| e.get("key").and_then(Value::as_str) == Some(name))
            .and_then(|e| e.get("value"))
            .and_then(text_of),
        Value::Object(map) => map.get(name).and_then(text_of),
        _ => None,
    }
}

/// Adds what `auth` sends to `request`; anything it cannot carry over becomes a note.
pub fn apply(
    auth: Option<&Value>,
    request: &mut Request,
    step: &str,
    scenario: &Scenario,
    notes: &mut Vec<Note>,
) {
    let Some(auth) = auth else { return };
    let kind = auth.get("type").and_then(Value::as_str).unwrap_or("noauth");
    let set_header = |request: &mut Request, name: &str, value: String, notes: &mut Vec<Note>| {
        if request.header(name).is_some() {
            notes.push(Note::step(
                step,
                format!("its own {name} header kept; the {kind} auth it inherits was not added"),
            ));
        } else {
            request.set_header(name, &value);
        }
    };
    match kind {
        "noauth" => {}
        "basic" => {
            let user = param(auth, "basic", "username").unwrap_or_default();
            let pass = param(auth, "basic", "password").unwrap_or_default();
            let plain = format!("{user}:{pass}");
            let names = template::names(&plain).unwrap_or_default();
            let resolved =
                template::substitute(&plain, |n| scenario.variable(n).map(str::to_string));
            if !names.is_empty() {
                notes.push(Note::step(
                    step,
                    format!(
                        "basic auth encoded at import time from {}: a --var given at run time does not change it",
                        names.iter().map(|n| format!("{{{{{n}}}}}")).collect::<Vec<_>>().join(" and ")
                    ),
                ));
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(resolved.as_bytes());
            set_header(request, "Authorization", format!("Basic {encoded}"), notes);
        }
        "bearer" => {
            let token = param(auth, "bearer", "token").unwrap_or_default();
            set_header(request, "Authorization", format!("Bearer {token}"), notes);
        }
        "apikey" => {
            let key = param(auth, "apikey", "key").unwrap_or_default();
            let value = param(auth, "apikey", "value").unwrap_or_default();
            if key.is_empty() {
                notes.push(Note::step(step, "API key auth without a key name: not added"));
            } else if param(auth, "apikey", "in").as_deref() == Some("query") {
                let sep = if request.url.contains('?') { '&' } else { '?' };
                request.url = format!("{}{sep}{key}={value}", request.url);
            } else {
                set_header(request, &key, value, notes);
            }
        }
        other => notes.push(Note::step(
            step,
            format!("{other} auth not carried over (it is computed per request); add the header it sends yourself"),
        )),
    }
}
