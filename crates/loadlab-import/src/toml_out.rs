//! Writes a [`Scenario`] as the TOML of `docs/scenario-format.md`, for a person to read and
//! edit: the source and what was not carried over as comments at the top, then the scenario's
//! keys, `[variables]`, `[defaults]` and the steps in order, each header and capture on its
//! own line. Long or multi-line bodies are written as multi-line literal strings so that JSON
//! stays readable. Nothing is written here that the format does not describe.

use crate::scenario::{Body, CaptureSource, Part, Request, Scenario, Step, StepAction};
use crate::{Note, Source};
use std::fmt::Write as _;

pub fn write(s: &Scenario, notes: &[Note], source: &Source) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Imported by `loadlab import {}` from {}.",
        source.kind,
        one_line(&source.label)
    );
    if notes.is_empty() {
        out.push_str("# Everything in the source was carried over.\n");
    } else {
        out.push_str("# Not carried over, or carried over differently:\n");
        for n in notes {
            let _ = writeln!(out, "#   - {}", one_line(&n.to_string()));
        }
    }
    out.push_str("# Run it: loadlab run --scenario THIS_FILE [--var NAME=VALUE ...]\n\n");

    let _ = writeln!(out, "name = {}", string(&s.name));
    if let Some(d) = &s.description {
        let _ = writeln!(out, "description = {}", string(d));
    }
    if let Some(b) = &s.base_url {
        let _ = writeln!(out, "base_url = {}", string(b));
    }
    if !s.variables.is_empty() {
        out.push_str("\n[variables]\n");
        for (k, v) in &s.variables {
            let _ = writeln!(out, "{} = {}", key(k), string(v));
        }
    }
    if !s.default_headers.is_empty() {
        out.push_str("\n[defaults.headers]\n");
        for (k, v) in &s.default_headers {
            let _ = writeln!(out, "{} = {}", key(k), string(v));
        }
    }
    for step in &s.steps {
        write_step(&mut out, step);
    }
    out
}

fn write_step(out: &mut String, step: &Step) {
    out.push_str("\n[[steps]]\n");
    let _ = writeln!(out, "name = {}", string(&step.name));
    if let StepAction::Request(r) = &step.action {
        write_request_keys(out, r);
    }
    if let Some(ms) = step.think_ms {
        let _ = writeln!(out, "think = {{ fixed = \"{ms}ms\" }}");
    }
    if let StepAction::Request(r) = &step.action {
        write_request_tables(out, r, "steps");
    }
    for c in &step.captures {
        out.push_str("\n[[steps.captures]]\n");
        let _ = writeln!(out, "var = {}", string(&c.var));
        let (k, v) = match &c.source {
            CaptureSource::Json(p) => ("json", p),
            CaptureSource::Header(h) => ("header", h),
            CaptureSource::Regex(r) => ("regex", r),
            CaptureSource::Cookie(c) => ("cookie", c),
        };
        let _ = writeln!(out, "{k} = {}", string(v));
    }
    if !step.status.is_empty() {
        out.push_str("\n[[steps.checks]]\n");
        match step.status.as_slice() {
            [one] => {
                let _ = writeln!(out, "status = {one}");
            }
            many => {
                let list: Vec<String> = many.iter().map(u16::to_string).collect();
                let _ = writeln!(out, "status = [{}]", list.join(", "));
            }
        }
    }
    if let StepAction::Page(requests) = &step.action {
        for r in requests {
            out.push_str("\n[[steps.requests]]\n");
            write_request_keys(out, r);
            write_request_tables(out, r, "steps.requests");
        }
    }
}

/// The keys that go before any sub-table: method, url, and a raw or file body.
fn write_request_keys(out: &mut String, r: &Request) {
    let _ = writeln!(out, "method = {}", string(&r.method));
    let _ = writeln!(out, "url = {}", string(&r.url));
    match &r.body {
        Some(Body::Raw(text)) => {
            let _ = writeln!(out, "body.raw = {}", string(text));
        }
        Some(Body::File(path)) => {
            let _ = writeln!(out, "body.file = {}", string(path));
        }
        _ => {}
    }
}

/// Headers, form and multipart bodies: one table each, one line per entry.
fn write_request_tables(out: &mut String, r: &Request, prefix: &str) {
    if !r.headers.is_empty() {
        let _ = writeln!(out, "\n[{prefix}.headers]");
        for (k, v) in &r.headers {
            let _ = writeln!(out, "{} = {}", key(k), string(v));
        }
    }
    match &r.body {
        Some(Body::Form(fields)) => {
            let _ = writeln!(out, "\n[{prefix}.body.form]");
            for (k, v) in fields {
                let _ = writeln!(out, "{} = {}", key(k), string(v));
            }
        }
        Some(Body::Multipart(parts)) => {
            let _ = writeln!(out, "\n[{prefix}.body.multipart]");
            for (k, p) in parts {
                match p {
                    Part::Text(v) => {
                        let _ = writeln!(out, "{} = {}", key(k), string(v));
                    }
                    Part::File(f) => {
                        let _ = writeln!(out, "{} = {{ file = {} }}", key(k), string(f));
                    }
                }
            }
        }
        _ => {}
    }
}

/// `s` as one comment line: line breaks become spaces, and the other control characters,
/// which a TOML comment may not hold (a host name in a recording can), their escape.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\r' | '\n' => out.push(' '),
            '\t' => out.push(c),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

/// A bare key when TOML allows one, a quoted key otherwise.
pub fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        basic(k)
    }
}

/// A TOML string, in the most readable form that holds `s` exactly: a multi-line literal for
/// multi-line text, a literal for text with quotes or backslashes, a basic string otherwise.
pub fn string(s: &str) -> String {
    let plain = !s
        .chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}');
    if plain && s.contains('\n') && !s.contains("'''") && !s.ends_with('\'') && !s.contains('\r') {
        return format!("'''\n{s}'''");
    }
    if plain
        && !s.contains('\n')
        && !s.contains('\t')
        && !s.contains('\'')
        && (s.contains('"') || s.contains('\\'))
    {
        return format!("'{s}'");
    }
    basic(s)
}

fn basic(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
