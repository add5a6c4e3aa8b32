//! The recording's `log`, read entry by entry: the whole text is checked as JSON once, but
//! only one entry at a time is held as a JSON tree (a tree of all 100,000 entries of a
//! recording took some 600 MB, fourteen times the file: issue 46 item 6). The outcome is the
//! one a tree of the whole document gives: the same fields found, the same errors.

use super::entry::{self, Entry};
use crate::ImportError;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// What the importer reads from `log`.
pub struct Log {
    /// `log.version`, "" when absent or not a string.
    pub version: String,
    /// `log.creator`, `log.pages` (small: kept as trees).
    pub creator: Value,
    pub pages: Value,
    /// `log.entries`, in the file's order.
    pub entries: Vec<Entry>,
}

/// An object's members, each left as text; `None` when `raw` is not an object. A key given
/// twice keeps its last value, as a tree of the document does.
fn members(raw: &RawValue) -> Option<BTreeMap<String, &RawValue>> {
    serde_json::from_str(raw.get()).ok()
}

fn tree(raw: Option<&&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

pub fn read(text: &str, label: &str) -> Result<Log, ImportError> {
    let what = || format!("HAR file {label}");
    let not_json = |error| ImportError::NotJson {
        what: what(),
        error,
    };
    let doc: &RawValue = serde_json::from_str(text).map_err(not_json)?;
    let log = members(doc)
        .and_then(|top| top.get("log").copied())
        .and_then(members)
        .ok_or_else(|| {
            ImportError::invalid(what(), "log", "missing: a HAR file is {\"log\": {...}}")
        })?;
    let version = tree(log.get("version"))
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !matches!(version.as_str(), "1.1" | "1.2") {
        return Err(ImportError::invalid(
            what(),
            "log.version",
            format!("{version:?} is not a HAR version loadlab reads (1.1 or 1.2): export the recording again from the browser's network panel"),
        ));
    }
    let raw: Vec<&RawValue> = log
        .get("entries")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| {
            ImportError::invalid(
                what(),
                "log.entries",
                "missing: the recording has no requests",
            )
        })?;
    let entries = raw
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let e: Value = serde_json::from_str(e.get()).map_err(not_json)?;
            entry::parse(&e, i + 1)
        })
        .collect::<Result<_, _>>()?;
    Ok(Log {
        version,
        creator: tree(log.get("creator")),
        pages: tree(log.get("pages")),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document read as one tree, as before issue 46: what [`read`] must agree with.
    fn whole(text: &str) -> Result<(String, Vec<String>, Value, Value), String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let log = doc
            .get("log")
            .filter(|l| l.is_object())
            .ok_or("log missing")?;
        let version = log.get("version").and_then(Value::as_str).unwrap_or("");
        if !matches!(version, "1.1" | "1.2") {
            return Err(format!("version {version:?}"));
        }
        let raw = log
            .get("entries")
            .and_then(Value::as_array)
            .ok_or("entries missing")?;
        let urls = raw
            .iter()
            .enumerate()
            .map(|(i, e)| entry::parse(e, i + 1).map(|e| e.url))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let creator = log.get("creator").cloned().unwrap_or(Value::Null);
        let pages = log.get("pages").cloned().unwrap_or(Value::Null);
        Ok((version.to_string(), urls, creator, pages))
    }

    fn by_entry(text: &str) -> Result<(String, Vec<String>, Value, Value), String> {
        match read(text, "t.har") {
            Ok(log) => Ok((
                log.version,
                log.entries.into_iter().map(|e| e.url).collect(),
                log.creator,
                log.pages,
            )),
            Err(e) => Err(match &e {
                ImportError::NotJson { error, .. } => format!("not JSON: {error}"),
                ImportError::Invalid { field, problem, .. } => match field.as_str() {
                    "log" => "log missing".to_string(),
                    "log.version" => format!(
                        "version {}",
                        problem.split(" is not").next().unwrap_or_default()
                    ),
                    "log.entries" => "entries missing".to_string(),
                    _ => e.to_string(),
                },
                _ => e.to_string(),
            }),
        }
    }

    #[test]
    fn entry_by_entry_reads_what_the_whole_tree_gives() {
        let e = |url: &str| {
            format!(
                r#"{{"startedDateTime":"2026-01-01T10:00:00Z","request":{{"method":"GET","url":"{url}"}}}}"#
            )
        };
        let cases = [
            String::new(),
            "[]".into(),
            "{} x".into(),
            r#"{"log": []}"#.into(),
            r#"{"log": {"version": 1.2, "entries": []}}"#.into(),
            r#"{"log": {"version": "1.2", "entries": {}}}"#.into(),
            r#"{"log": {"version": "1.2"}}"#.into(),
            format!(
                r#"{{"log": {{"version": "1.1", "entries": [{}, 7]}}}}"#,
                e("http://a/")
            ),
            // A key given twice: the last one counts.
            format!(
                r#"{{"log": {{"version": "1.2", "entries": [{}], "entries": [{}, {}]}}, "x": 1}}"#,
                e("http://first/"),
                e("http://a/"),
                e("http://b/\u{e9}\\u00e9")
            ),
            format!(
                r#"{{"log": {{"version": "1.2", "creator": {{"name": "Firefox", "version": "1"}},
                   "pages": [{{"id": "p", "title": "T"}}], "entries": [{}]}}}}"#,
                e("http://a/?q=\\\"x\\\"")
            ),
        ];
        for text in &cases {
            assert_eq!(by_entry(text), whole(text), "{text}");
        }
    }
}
