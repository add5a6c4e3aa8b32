//! Postman's request bodies (raw, urlencoded, form-data, file, GraphQL) as the scenario
//! format's `body.raw`, `body.form`, `body.multipart` and `body.file`. Disabled fields are
//! skipped, as Postman skips them. A raw body's language sets `Content-Type` when the request
//! has none, as Postman's app does.

use super::text_of;
use crate::scenario::{Body, Part, Request};
use crate::Note;
use serde_json::Value;

fn enabled(entry: &Value) -> bool {
    entry.get("disabled").and_then(Value::as_bool) != Some(true)
}

/// Sets `request.body` (and a default `Content-Type`) from a Postman `body` object.
pub fn apply(body: Option<&Value>, request: &mut Request, step: &str, notes: &mut Vec<Note>) {
    let Some(body) = body.filter(|b| b.is_object()) else {
        return;
    };
    if body.get("disabled").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let mode = body.get("mode").and_then(Value::as_str).unwrap_or("raw");
    match mode {
        "raw" => {
            let text = body.get("raw").and_then(Value::as_str).unwrap_or_default();
            if text.is_empty() {
                return;
            }
            let language = body
                .pointer("/options/raw/language")
                .and_then(Value::as_str)
                .unwrap_or("text");
            let content_type = match language {
                "json" => "application/json",
                "javascript" => "application/javascript",
                "html" => "text/html",
                "xml" => "application/xml",
                _ => "text/plain",
            };
            if request.header("Content-Type").is_none() {
                request.set_header("Content-Type", content_type);
            }
            request.body = Some(Body::Raw(text.to_string()));
        }
        "urlencoded" => {
            let fields = entries(body.get("urlencoded"))
                .map(|(k, v, _)| (k, v))
                .collect::<Vec<_>>();
            drop_content_type(request, "application/x-www-form-urlencoded", step, notes);
            request.body = Some(Body::Form(unique(fields, step, "form field", notes)));
        }
        "formdata" => {
            let mut parts = Vec::new();
            for (key, value, entry) in entries(body.get("formdata")) {
                if entry.get("type").and_then(Value::as_str) == Some("file") {
                    let src = match entry.get("src") {
                        Some(Value::Array(files)) => {
                            if files.len() > 1 {
                                notes.push(Note::step(
                                    step,
                                    format!(
                                        "form field {key}: only the first of its {} files kept",
                                        files.len()
                                    ),
                                ));
                            }
                            files.first().and_then(text_of)
                        }
                        Some(v) => text_of(v),
                        None => None,
                    }
                    .unwrap_or_default();
                    notes.push(Note::step(
                        step,
                        format!("form field {key} sends the file {src:?}: the path is taken relative to the scenario file; copy the file there"),
                    ));
                    parts.push((key, Part::File(src)));
                } else {
                    parts.push((key, Part::Text(value)));
                }
            }
            drop_content_type(request, "multipart/form-data", step, notes);
            request.body = Some(Body::Multipart(unique(
                parts,
                step,
                "form-data field",
                notes,
            )));
        }
        "file" => {
            let src = body
                .pointer("/file/src")
                .and_then(text_of)
                .unwrap_or_default();
            notes.push(Note::step(
                step,
                format!("the body is the file {src:?}: the path is taken relative to the scenario file; copy the file there"),
            ));
            request.body = Some(Body::File(src));
        }
        "graphql" => {
            let query = body
                .pointer("/graphql/query")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let variables = body
                .pointer("/graphql/variables")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .unwrap_or("{}");
            // The variables are written as the user typed them: they may hold `{{NAME}}`
            // where a JSON value goes, which only the substitution makes valid JSON.
            let text = format!(
                "{{\"query\":{},\"variables\":{variables}}}",
                serde_json::Value::String(query.to_string())
            );
            if request.header("Content-Type").is_none() {
                request.set_header("Content-Type", "application/json");
            }
            request.body = Some(Body::Raw(text));
        }
        other => notes.push(Note::step(
            step,
            format!("body mode {other:?} not carried over"),
        )),
    }
}

/// Enabled `{key, value}` entries, values as text.
fn entries(list: Option<&Value>) -> impl Iterator<Item = (String, String, &Value)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| enabled(e))
        .filter_map(|e| {
            let key = e.get("key").and_then(text_of)?;
            let value = e.get("value").and_then(text_of).unwrap_or_default();
            Some((key, value, e))
        })
}

/// The format's form and multipart bodies set their own Content-Type (with the boundary).
fn drop_content_type(request: &mut Request, kind: &str, step: &str, notes: &mut Vec<Note>) {
    if let Some(ct) = request.header("Content-Type").map(str::to_string) {
        if !ct.to_ascii_lowercase().starts_with(kind) {
            notes.push(Note::step(
                step,
                format!("Content-Type {ct:?} replaced by {kind}, which the body's mode sends"),
            ));
        }
        request.remove_header("Content-Type");
    }
}

/// A TOML table cannot repeat a key: a repeated field keeps its first value, with a note.
pub(crate) fn unique<T>(
    fields: Vec<(String, T)>,
    step: &str,
    what: &str,
    notes: &mut Vec<Note>,
) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for (k, v) in fields {
        if out.iter().any(|(seen, _)| *seen == k) {
            notes.push(Note::step(
                step,
                format!("{what} {k} repeated: only its first value kept"),
            ));
        } else {
            out.push((k, v));
        }
    }
    out
}
