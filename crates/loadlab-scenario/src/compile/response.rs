//! What a step does with its response: the captures that set variables and the checks that
//! pass or fail it, compiled once at load (JSON paths parsed, regexes built).

use super::request::is_token;
use super::Vars;
use crate::capture::{Capture, JsonPath, Source};
use crate::check::{Check, StatusMatch};
use crate::error::{invalid, ScenarioError};
use crate::file::{CaptureFile, CheckFile, GrpcCodeFile, GrpcStatusFile, StatusFile};
use crate::grpc::parse_code;

/// What a step is, for what its captures and checks may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepKind {
    Http,
    Grpc,
    Ws,
}

pub(super) fn compile_capture(
    c: &CaptureFile,
    k: usize,
    item: &str,
    vars: &Vars,
    kind: StepKind,
) -> Result<Capture, ScenarioError> {
    let field = |f: &str| format!("captures[{k}].{f}");
    if kind == StepKind::Ws && (c.header.is_some() || c.cookie.is_some()) {
        return Err(invalid(
            item,
            format!("captures[{k}]"),
            "a WebSocket step captures from its last answer: json = \"$.field\" or regex",
        ));
    }
    if kind == StepKind::Grpc && c.cookie.is_some() {
        return Err(invalid(
            item,
            field("cookie"),
            "a gRPC answer sets no cookies; capture from the message (json = \"$.field\") or \
             its metadata (header = \"name\")",
        ));
    }
    let source = match (&c.json, &c.header, &c.regex, &c.cookie) {
        (Some(p), None, None, None) => {
            Source::Json(JsonPath::parse(p).map_err(|m| invalid(item, field("json"), m))?)
        }
        (None, Some(h), None, None) if is_token(h) => Source::Header(h.to_ascii_lowercase()),
        (None, Some(h), None, None) => {
            return Err(invalid(
                item,
                field("header"),
                format!("`{h}` is not a header name"),
            ))
        }
        (None, None, Some(r), None) => Source::Regex(regex::bytes::Regex::new(r).map_err(|e| {
            invalid(
                item,
                field("regex"),
                format!("not a regular expression: {e}"),
            )
        })?),
        (None, None, None, Some(name)) if !name.trim().is_empty() => {
            Source::Cookie(name.trim().to_string())
        }
        _ => {
            return Err(invalid(
                item,
                format!("captures[{k}]"),
                format!(
                    "capture {} needs exactly one of json, header, regex or cookie",
                    c.var
                ),
            ))
        }
    };
    Ok(Capture {
        var: c.var.clone(),
        slot: vars.slots[&c.var],
        source,
    })
}

pub(super) fn compile_check(
    c: &CheckFile,
    k: usize,
    item: &str,
    kind: StepKind,
) -> Result<Check, ScenarioError> {
    let field = |f: &str| format!("checks[{k}].{f}");
    if kind == StepKind::Ws && c.status.is_some() {
        return Err(invalid(
            item,
            field("status"),
            "a WebSocket step's status is its upgrade's (101, or the upgrade fails as ws_refused); \
             check its last answer with body_contains or json",
        ));
    }
    let grpc = kind == StepKind::Grpc;
    match (&c.grpc_status, grpc) {
        (Some(_), false) => {
            return Err(invalid(
                item,
                field("grpc_status"),
                "only a gRPC step has a gRPC status; check an HTTP step's with status = 200",
            ))
        }
        (None, true) if c.status.is_some() => {
            return Err(invalid(
                item,
                field("status"),
                "a gRPC step is judged by its gRPC status: write grpc_status = \"OK\" (or a \
                 name such as \"NOT_FOUND\", a code, or a list)",
            ))
        }
        (Some(s), true) => {
            if c.status.is_some() || c.body_contains.is_some() || c.json.is_some() {
                return Err(invalid(
                    item,
                    format!("checks[{k}]"),
                    "give exactly one of grpc_status, body_contains or json (with equals)",
                ));
            }
            let codes = match s {
                GrpcStatusFile::One(one) => vec![one],
                GrpcStatusFile::Many(many) if !many.is_empty() => many.iter().collect(),
                GrpcStatusFile::Many(_) => {
                    return Err(invalid(
                        item,
                        field("grpc_status"),
                        "an empty list; give e.g. [\"OK\", \"NOT_FOUND\"]",
                    ))
                }
            };
            let codes = codes
                .into_iter()
                .map(|c| match c {
                    GrpcCodeFile::Code(n) => parse_code(&n.to_string()),
                    GrpcCodeFile::Name(name) => parse_code(name),
                })
                .collect::<Result<Vec<u32>, String>>()
                .map_err(|m| invalid(item, field("grpc_status"), m))?;
            return Ok(Check::GrpcStatus(codes));
        }
        _ => {}
    }
    if c.equals.is_some() && c.json.is_none() {
        return Err(invalid(
            item,
            field("equals"),
            "needs json = \"$.path\" beside it: the value at that path is compared",
        ));
    }
    match (&c.status, &c.body_contains, &c.json) {
        (Some(s), None, None) => Ok(Check::Status(compile_status(s, item, &field("status"))?)),
        (None, Some(text), None) => Ok(Check::BodyContains(text.clone())),
        (None, None, Some(path)) => Ok(Check::Json {
            path: JsonPath::parse(path).map_err(|m| invalid(item, field("json"), m))?,
            equals: match &c.equals {
                Some(v) => Some(
                    serde_json::to_value(v)
                        .map_err(|e| invalid(item, field("equals"), e.to_string()))?,
                ),
                None => None,
            },
        }),
        _ => Err(invalid(
            item,
            format!("checks[{k}]"),
            "give exactly one of status, body_contains or json (with equals)",
        )),
    }
}

fn compile_status(s: &StatusFile, item: &str, field: &str) -> Result<StatusMatch, ScenarioError> {
    let code = |n: i64| -> Result<u16, ScenarioError> {
        if (100..=599).contains(&n) {
            Ok(n as u16)
        } else {
            Err(invalid(
                item,
                field,
                format!("{n} is not an HTTP status; use 100 to 599"),
            ))
        }
    };
    match s {
        StatusFile::Code(n) => Ok(StatusMatch::Exact(code(*n)?)),
        StatusFile::Codes(list) if !list.is_empty() => Ok(StatusMatch::AnyOf(
            list.iter().map(|n| code(*n)).collect::<Result<_, _>>()?,
        )),
        StatusFile::Codes(_) => Err(invalid(item, field, "an empty list; give e.g. [200, 404]")),
        StatusFile::Class(c) => {
            let b = c.as_bytes();
            if b.len() == 3 && (b'1'..=b'5').contains(&b[0]) && c[1..].eq_ignore_ascii_case("xx") {
                Ok(StatusMatch::Class(u16::from(b[0] - b'0')))
            } else {
                Err(invalid(
                    item,
                    field,
                    format!("`{c}` is not a status class; write e.g. \"2xx\", or a code"),
                ))
            }
        }
    }
}
