//! A Postman request's URL: `raw` with only the enabled query parameters (or the parts joined
//! when there is no `raw`), `:name` path variables filled in, and `http://` added when the
//! URL has no scheme, as Postman sends it.

use super::text_of;
use crate::scenario::Scenario;
use crate::template;
use serde_json::Value;

/// A request URL: `raw` with the enabled query parameters, or the parts joined when there is
/// no `raw`; `:name` path variables replaced by their values.
pub(super) fn url_of(url: Option<&Value>) -> String {
    let Some(url) = url else { return String::new() };
    let obj = match url {
        Value::String(s) => return s.clone(),
        Value::Object(o) => o,
        _ => return String::new(),
    };
    let mut base = match obj.get("raw").and_then(Value::as_str) {
        Some(raw) => raw.split(['?', '#']).next().unwrap_or("").to_string(),
        None => {
            let host = match obj.get("host") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(text_of)
                    .collect::<Vec<_>>()
                    .join("."),
                Some(v) => text_of(v).unwrap_or_default(),
                None => String::new(),
            };
            let mut out = match obj.get("protocol").and_then(Value::as_str) {
                Some(p) => format!("{p}://{host}"),
                None => host,
            };
            if let Some(port) = obj.get("port").and_then(text_of) {
                out = format!("{out}:{port}");
            }
            match obj.get("path") {
                Some(Value::Array(parts)) => {
                    for p in parts.iter().filter_map(text_of) {
                        out.push('/');
                        out.push_str(&p);
                    }
                }
                Some(Value::String(p)) => {
                    if !p.starts_with('/') {
                        out.push('/');
                    }
                    out.push_str(p);
                }
                _ => {}
            }
            out
        }
    };
    for var in obj
        .get("variable")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(key), Some(value)) = (
            var.get("key").and_then(text_of),
            var.get("value").and_then(text_of),
        ) else {
            continue;
        };
        base = replace_path_variable(&base, &key, &value);
    }
    let query: Vec<String> = match obj.get("query").and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .filter(|q| q.get("disabled").and_then(Value::as_bool) != Some(true))
            .filter_map(|q| {
                let key = q.get("key").and_then(text_of)?;
                Some(match q.get("value").and_then(text_of) {
                    Some(v) => format!("{key}={v}"),
                    None => key,
                })
            })
            .collect(),
        None => match obj
            .get("raw")
            .and_then(Value::as_str)
            .and_then(|r| r.split_once('?'))
        {
            Some((_, q)) => vec![q.split('#').next().unwrap_or("").to_string()],
            None => Vec::new(),
        },
    };
    let query: Vec<String> = query.into_iter().filter(|q| !q.is_empty()).collect();
    if query.is_empty() {
        base
    } else {
        format!("{base}?{}", query.join("&"))
    }
}

/// `/users/:id` with `id = 5` is `/users/5` (only whole segments after the host).
fn replace_path_variable(url: &str, key: &str, value: &str) -> String {
    let needle = format!("/:{key}");
    let mut out = String::new();
    let mut rest = url;
    while let Some(at) = rest.find(&needle) {
        let after = &rest[at + needle.len()..];
        let whole = after.is_empty() || after.starts_with('/');
        out.push_str(&rest[..at]);
        if whole {
            out.push('/');
            out.push_str(value);
        } else {
            out.push_str(&needle);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Postman sends a URL without a scheme over http.
pub(super) fn with_scheme(url: &str, s: &Scenario) -> String {
    let resolved = template::substitute(url, |n| s.variable(n).map(str::to_string));
    if crate::address::has_scheme(&resolved) {
        url.to_string()
    } else {
        format!("http://{url}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_variables_replace_whole_segments() {
        assert_eq!(
            replace_path_variable("http://h/users/:id/posts", "id", "5"),
            "http://h/users/5/posts"
        );
        assert_eq!(
            replace_path_variable("http://h/users/:id", "id", "{{ID}}"),
            "http://h/users/{{ID}}"
        );
        assert_eq!(
            replace_path_variable("http://h/x/:idx", "id", "5"),
            "http://h/x/:idx"
        );
    }
}
