//! Postman collections (format v2.1 and v2.0) to scenarios: the requests of nested folders in
//! order, each a step named "Folder / Request"; variables from the collection, then the
//! environment, then `--var` (each overriding the one before, as Postman's scopes do); auth
//! inherited down the folders ([`auth`]); bodies ([`body`]); scripts reported, simple status
//! tests kept as checks ([`scripts`]). Disabled items, headers, query parameters and fields
//! are skipped, as Postman skips them.
//!
//! What it must not do: execute a script, or guess a value the collection does not give.

mod auth;
mod body;
pub mod scripts;
mod url;

use crate::scenario::{self, Request, Scenario, Step};
use crate::{template, ImportError, Imported, Note, Source};
use serde_json::Value;

/// What the importer needs besides the collection's text.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The collection file's name, for the comment at the top.
    pub label: String,
    /// An environment export's text, and its file name.
    pub environment: Option<(String, String)>,
    /// `--var NAME=VALUE`, in order; the last one of a name wins.
    pub vars: Vec<(String, String)>,
    /// Keep the values of the environment's `secret` variables (they are blanked otherwise).
    pub keep_secrets: bool,
}

/// A value Postman keeps as text (strings; numbers and booleans are also accepted).
pub(crate) fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The deepest nesting of arrays and objects a collection may have: 1,000 levels, about 495
/// folders within folders (each folder is an object and its `item` list). serde_json alone
/// stops at 128 (about 60 folders) and calls that "not JSON"; past 128 its depth check is
/// lifted and this one, stated and explained, takes its place. Reading a value and walking
/// the folders recurse once per level: 1,000 levels stay well inside a 2 MiB thread stack
/// even in a debug build (the tests import 495 folders on a test thread).
pub const MAX_NESTING: usize = 1_000;

fn parse_json(text: &str, what: &str) -> Result<Value, ImportError> {
    let depth = nesting(text);
    if depth > MAX_NESTING {
        return Err(ImportError::invalid(
            what,
            "nesting",
            format!(
                "nested {depth} levels deep; loadlab reads at most 1,000 (about 495 folders \
                 within folders): move the requests into fewer levels of folders"
            ),
        ));
    }
    let not_json = |error| ImportError::NotJson {
        what: what.to_string(),
        error,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let mut values = de.into_iter::<Value>();
    let value = match values.next() {
        Some(value) => value.map_err(not_json)?,
        // Empty text: the parser's own words for it.
        None => return serde_json::from_str(text).map_err(not_json),
    };
    if values.next().is_some() {
        return Err(ImportError::invalid(
            what,
            "JSON",
            format!(
                "more text after the JSON value ends at byte {}: export it again, or check \
                 that this is the right file",
                values.byte_offset()
            ),
        ));
    }
    Ok(value)
}

/// The deepest nesting of `[` and `{` in `text`, outside strings (one pass, no parsing:
/// malformed text is the parser's to report).
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The collection's format version from `info.schema`; anything but v2.0 and v2.1 is refused.
fn version(doc: &Value, label: &str) -> Result<&'static str, ImportError> {
    let item = format!("collection {label}");
    let Some(info) = doc.get("info").filter(|i| i.is_object()) else {
        let hint = if doc.get("requests").is_some() && doc.get("order").is_some() {
            "this is a Postman v1 collection: open it in Postman and export it as Collection v2.1"
        } else {
            "no `info` object: this is not a Postman collection (export one with Collection v2.1)"
        };
        return Err(ImportError::invalid(item, "info", hint));
    };
    let schema = info.get("schema").and_then(Value::as_str).unwrap_or("");
    if schema.contains("/v2.1.") {
        Ok("v2.1")
    } else if schema.contains("/v2.0.") {
        Ok("v2.0")
    } else {
        Err(ImportError::invalid(
            item,
            "info.schema",
            format!("schema {schema:?} is not a collection format loadlab reads (v2.0 or v2.1): export the collection again as Collection v2.1"),
        ))
    }
}

pub fn import(collection: &str, options: &Options) -> Result<Imported, ImportError> {
    let doc = parse_json(collection, &format!("collection {}", options.label))?;
    let version = version(&doc, &options.label)?;
    let info = &doc["info"];
    let mut notes = Vec::new();
    let mut s = Scenario {
        name: info
            .get("name")
            .and_then(text_of)
            .unwrap_or_else(|| "postman".into()),
        description: match info.get("description") {
            Some(Value::String(d)) => Some(d.clone()),
            Some(Value::Object(d)) => d.get("content").and_then(text_of),
            _ => None,
        }
        .filter(|d| !d.trim().is_empty()),
        ..Scenario::default()
    };
    variables(&doc, options, &mut s, &mut notes)?;

    let label = match &options.environment {
        Some((_, env)) => format!(
            "{} (Postman collection {version}) with environment {env}",
            options.label
        ),
        None => format!("{} (Postman collection {version})", options.label),
    };
    let top = Level {
        path: Vec::new(),
        auth: doc.get("auth").filter(|a| !a.is_null()),
        statuses: Vec::new(),
    };
    report_scripts(doc.get("event"), "the collection", &mut notes);
    let top = top.with_tests(doc.get("event"));
    let items = doc.get("item").and_then(Value::as_array).ok_or_else(|| {
        ImportError::invalid(
            format!("collection {}", options.label),
            "item",
            "no `item` list: the collection has no requests",
        )
    })?;
    walk(
        items,
        &top,
        &mut s,
        &mut scenario::UniqueNames::default(),
        &mut notes,
    )?;
    if s.steps.is_empty() {
        return Err(ImportError::invalid(
            format!("collection {}", options.label),
            "item",
            "no enabled request in the collection",
        ));
    }
    scenario::hoist_base_url(&mut s);
    crate::finish(
        s,
        notes,
        &Source {
            kind: "postman",
            label,
        },
    )
}

/// Collection variables, overridden by the environment's, overridden by `--var`; values that
/// refer to other variables are resolved, as Postman resolves them when it sends.
fn variables(
    doc: &Value,
    o: &Options,
    s: &mut Scenario,
    notes: &mut Vec<Note>,
) -> Result<(), ImportError> {
    for v in doc
        .get("variable")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if v.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(key) = v.get("key").and_then(text_of) {
            s.set_variable(&key, &v.get("value").and_then(text_of).unwrap_or_default());
        }
    }
    if let Some((text, label)) = &o.environment {
        let env = parse_json(text, &format!("environment {label}"))?;
        let values = env.get("values").and_then(Value::as_array).ok_or_else(|| {
            ImportError::invalid(
                format!("environment {label}"),
                "values",
                "no `values` list: this is not a Postman environment export",
            )
        })?;
        for v in values {
            if v.get("enabled").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let Some(key) = v.get("key").and_then(text_of) else {
                continue;
            };
            let mut value = v.get("value").and_then(text_of).unwrap_or_default();
            if v.get("type").and_then(Value::as_str) == Some("secret")
                && !o.keep_secrets
                && !value.is_empty()
            {
                notes.push(Note::scenario(format!(
                    "the environment's secret {key} was left empty: give it with --var {key}=... (or import with --keep-secrets)"
                )));
                value.clear();
            }
            s.set_variable(&key, &value);
        }
    }
    for (k, v) in &o.vars {
        s.set_variable(k, v);
    }
    for _ in 0..8 {
        let snapshot = s.variables.clone();
        let lookup = |n: &str| {
            snapshot
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
        };
        for (_, value) in s.variables.iter_mut() {
            *value = template::substitute(value, lookup);
        }
        if s.variables == snapshot {
            break;
        }
    }
    Ok(())
}

/// What a folder passes down to its items.
struct Level<'a> {
    path: Vec<String>,
    auth: Option<&'a Value>,
    /// Statuses asserted by the test scripts of this level and those above.
    statuses: Vec<u16>,
}

impl<'a> Level<'a> {
    fn with_tests(mut self, events: Option<&Value>) -> Level<'a> {
        let own = scripts::statuses(&scripts::text(events, "test"));
        if !own.is_empty() {
            self.statuses = own;
        }
        self
    }
}

fn report_scripts(events: Option<&Value>, whose: &str, notes: &mut Vec<Note>) {
    for (listen, what) in [("prerequest", "pre-request"), ("test", "test")] {
        let script = scripts::text(events, listen);
        if script.is_empty() {
            continue;
        }
        let statuses = if listen == "test" {
            scripts::statuses(&script)
        } else {
            vec![]
        };
        let kept = if statuses.is_empty() {
            String::new()
        } else {
            format!(
                "; its status check ({}) kept for every request under it",
                join(&statuses)
            )
        };
        notes.push(Note::scenario(format!(
            "{whose}'s {what} script ({} lines) not executed{kept}",
            scripts::code_lines(&script)
        )));
    }
}

fn join(statuses: &[u16]) -> String {
    statuses
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn walk(
    items: &[Value],
    level: &Level,
    s: &mut Scenario,
    names: &mut scenario::UniqueNames,
    notes: &mut Vec<Note>,
) -> Result<(), ImportError> {
    for item in items {
        let name = item
            .get("name")
            .and_then(text_of)
            .unwrap_or_else(|| "(unnamed)".into());
        let mut path = level.path.clone();
        path.push(name);
        let joined = path.join(" / ");
        if item.get("disabled").and_then(Value::as_bool) == Some(true) {
            notes.push(Note::scenario(format!("\"{joined}\" is disabled: skipped")));
            continue;
        }
        if let Some(children) = item.get("item").and_then(Value::as_array) {
            report_scripts(item.get("event"), &format!("folder \"{joined}\""), notes);
            let folder = Level {
                path,
                auth: auth::resolve(item.get("auth"), level.auth),
                statuses: level.statuses.clone(),
            }
            .with_tests(item.get("event"));
            walk(children, &folder, s, names, notes)?;
            continue;
        }
        let step_name = names.give(&joined);
        let step = request_step(item, &step_name, level, s, notes)?;
        s.steps.push(step);
    }
    Ok(())
}

fn request_step(
    item: &Value,
    name: &str,
    level: &Level,
    s: &Scenario,
    notes: &mut Vec<Note>,
) -> Result<Step, ImportError> {
    let at = format!("item \"{name}\"");
    let req = item.get("request").ok_or_else(|| {
        ImportError::invalid(&at, "request", "neither a request nor a folder (`item`)")
    })?;
    let mut request = Request {
        method: "GET".into(),
        ..Request::default()
    };
    let url = match req {
        Value::String(url) => url.clone(),
        Value::Object(_) => {
            request.method = req
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("GET")
                .to_ascii_uppercase();
            url::url_of(req.get("url"))
        }
        _ => String::new(),
    };
    if url.trim().is_empty() {
        return Err(ImportError::invalid(
            at,
            "request.url",
            "no URL: give the request one in Postman and export again",
        ));
    }
    request.url = url::with_scheme(url.trim(), s);
    headers(req.get("header"), &mut request, name, notes);
    body::apply(req.get("body"), &mut request, name, notes);
    auth::apply(
        auth::resolve(req.get("auth"), level.auth),
        &mut request,
        name,
        s,
        notes,
    );

    let mut step = Step::new(name.to_string(), request);
    for (listen, what) in [("prerequest", "pre-request"), ("test", "test")] {
        let script = scripts::text(item.get("event"), listen);
        if script.is_empty() {
            continue;
        }
        let found = if listen == "test" {
            scripts::statuses(&script)
        } else {
            vec![]
        };
        let kept = if found.is_empty() {
            String::new()
        } else {
            step.status = found.clone();
            format!("; its status check kept: status = {}", join(&found))
        };
        notes.push(Note::step(
            name,
            format!(
                "{what} script ({} lines) not executed{kept}",
                scripts::code_lines(&script)
            ),
        ));
    }
    if step.status.is_empty() {
        step.status = level.statuses.clone();
    }
    if step.status.is_empty() {
        if let Some(n) = item
            .get("name")
            .and_then(Value::as_str)
            .and_then(scripts::status_from_name)
        {
            step.status = vec![n];
            notes.push(Note::step(
                name,
                format!(
                    "expects status {n}, as its name says (a check the collection did not have)"
                ),
            ));
        }
    }
    Ok(step)
}

/// Enabled headers (a list of `{key, value}`, or v2.0's "Name: value" lines).
fn headers(list: Option<&Value>, request: &mut Request, step: &str, notes: &mut Vec<Note>) {
    let pairs: Vec<(String, String)> = match list {
        Some(Value::Array(entries)) => entries
            .iter()
            .filter(|h| h.get("disabled").and_then(Value::as_bool) != Some(true))
            .filter_map(|h| {
                Some((
                    h.get("key").and_then(text_of)?,
                    h.get("value").and_then(text_of).unwrap_or_default(),
                ))
            })
            .collect(),
        Some(Value::String(lines)) => lines
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
        _ => Vec::new(),
    };
    for (k, v) in pairs {
        if k.trim().is_empty() {
            continue;
        }
        match request.header(&k) {
            Some(prev) => {
                let joined = format!("{prev}, {v}");
                notes.push(Note::step(
                    step,
                    format!("header {k} given twice: sent once, the values joined with \", \""),
                ));
                request.set_header(&k, &joined);
            }
            None => request.headers.push((k, v)),
        }
    }
}
