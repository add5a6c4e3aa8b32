//! Checks on a step's response (a status, a body substring, a JSON value) and the judgment
//! of a response: captures taken, checks run, and the failure class when one fails. Pure:
//! the engine counts what this decides.

use crate::capture::{json_to_text, Capture, JsonPath, Response};

/// Which statuses a `status` check accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusMatch {
    Exact(u16),
    AnyOf(Vec<u16>),
    /// `2xx`: the hundreds digit.
    Class(u16),
}

impl StatusMatch {
    pub fn accepts(&self, status: u16) -> bool {
        match self {
            StatusMatch::Exact(s) => *s == status,
            StatusMatch::AnyOf(list) => list.contains(&status),
            StatusMatch::Class(c) => status / 100 == *c,
        }
    }

    fn describe(&self) -> String {
        match self {
            StatusMatch::Exact(s) => s.to_string(),
            StatusMatch::AnyOf(l) => format!("{l:?}"),
            StatusMatch::Class(c) => format!("{c}xx"),
        }
    }
}

/// A compiled check.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    Status(StatusMatch),
    BodyContains(String),
    /// The value at the path equals `equals`, or (with `None`) exists.
    Json {
        path: JsonPath,
        equals: Option<serde_json::Value>,
    },
    /// A gRPC step's status is one of these codes.
    GrpcStatus(Vec<u32>),
}

impl Check {
    /// The check as a reader would name it: `status 404`, `body contains "ok"`, `$.ok == true`.
    pub fn describe(&self) -> String {
        match self {
            Check::Status(m) => format!("status {}", m.describe()),
            Check::BodyContains(s) => format!("body contains {s:?}"),
            Check::Json {
                path,
                equals: Some(v),
            } => format!("{} == {v}", path.text),
            Check::Json { path, equals: None } => format!("{} exists", path.text),
            Check::GrpcStatus(codes) => format!("grpc_status {}", grpc_codes(codes)),
        }
    }

    pub fn needs_body(&self) -> bool {
        !matches!(self, Check::Status(_) | Check::GrpcStatus(_))
    }

    /// A status check, HTTP's or gRPC's: judged first, and its presence makes the step's
    /// status its own business.
    fn is_status(&self) -> bool {
        matches!(self, Check::Status(_) | Check::GrpcStatus(_))
    }

    /// `Ok` when the response passes, else what was wrong. `grpc`: a gRPC step's status.
    pub fn run(
        &self,
        response: &Response,
        json: Option<&serde_json::Value>,
        grpc: Option<u32>,
    ) -> Result<(), String> {
        match self {
            Check::GrpcStatus(codes) => match grpc {
                Some(code) if codes.contains(&code) => Ok(()),
                Some(code) => Err(format!(
                    "grpc_status {} expected, got {}",
                    grpc_codes(codes),
                    crate::grpc::code_name(code)
                )),
                None => Err("grpc_status: not a gRPC answer".into()),
            },
            Check::Status(m) if m.accepts(response.status) => Ok(()),
            Check::Status(m) => Err(format!(
                "status {} expected, got {}",
                m.describe(),
                response.status
            )),
            Check::BodyContains(s) => {
                let found = response
                    .body
                    .windows(s.len().max(1))
                    .any(|w| w == s.as_bytes());
                if found || s.is_empty() {
                    Ok(())
                } else {
                    Err(format!("body does not contain {s:?}"))
                }
            }
            Check::Json { path, equals } => {
                let Some(found) = json.and_then(|j| path.find(j)) else {
                    return Err(if json.is_none() {
                        format!("{}: the body is not JSON", path.text)
                    } else {
                        format!("{} not found", path.text)
                    });
                };
                match equals {
                    Some(want) if !json_equal(found, want) => Err(format!(
                        "{} is {}, expected {want}",
                        path.text,
                        json_to_text(found)
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// `NOT_FOUND`, or `[OK, NOT_FOUND]`.
fn grpc_codes(codes: &[u32]) -> String {
    let names: Vec<&str> = codes.iter().map(|c| crate::grpc::code_name(*c)).collect();
    match names.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Numbers compare by value (`1` equals `1.0`: TOML and JSON write them differently).
fn json_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// How a response was judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// No `status` check, and a status of 400 or more: the `status` failure class.
    BadStatus(u16),
    /// A gRPC step with no `grpc_status` check ended with this code, not OK: the code's own
    /// failure class, as a gRPC run counts it.
    BadGrpcStatus(u32),
    /// A check or a capture failed: `check_failed`. `index` numbers the step's checks, then
    /// its captures (see [`assertion_names`]).
    CheckFailed {
        index: usize,
        message: String,
    },
}

/// The names of a step's checks then captures, indexed as [`Verdict::CheckFailed`] is.
pub fn assertion_names(checks: &[Check], captures: &[Capture]) -> Vec<String> {
    checks
        .iter()
        .map(Check::describe)
        .chain(captures.iter().map(|c| format!("capture {}", c.var)))
        .collect()
}

/// Judges one response: status checks first (a wrong status says more than a missing
/// value), then captures (writing `values`), then the other checks. A step with no status
/// check fails on 400 and above, as a single-URL run does; one with a status check is judged
/// by it alone.
pub fn judge(
    checks: &[Check],
    captures: &[Capture],
    response: &Response,
    values: &mut [String],
) -> Verdict {
    judge_call(checks, captures, response, None, values)
}

/// [`judge`], for a gRPC step too: `grpc` is the status code its call ended with (the
/// response's body then is the answer message as JSON). Without a `grpc_status` check, a
/// code other than OK fails the step as that code's class.
pub fn judge_call(
    checks: &[Check],
    captures: &[Capture],
    response: &Response,
    grpc: Option<u32>,
    values: &mut [String],
) -> Verdict {
    let mut has_status = false;
    for (index, check) in checks.iter().enumerate() {
        if check.is_status() {
            has_status = true;
            if let Err(message) = check.run(response, None, grpc) {
                return Verdict::CheckFailed { index, message };
            }
        }
    }
    if !has_status && response.status >= 400 {
        return Verdict::BadStatus(response.status);
    }
    match grpc {
        Some(code) if !has_status && code != 0 => return Verdict::BadGrpcStatus(code),
        _ => {}
    }
    let wants_json = captures
        .iter()
        .any(|c| matches!(c.source, crate::capture::Source::Json(_)))
        || checks.iter().any(|c| matches!(c, Check::Json { .. }));
    let json: Option<serde_json::Value> = if wants_json {
        serde_json::from_slice(response.body).ok()
    } else {
        None
    };
    for (k, capture) in captures.iter().enumerate() {
        match capture.take(response, json.as_ref()) {
            Ok(v) => values[capture.slot] = v,
            Err(message) => {
                return Verdict::CheckFailed {
                    index: checks.len() + k,
                    message,
                }
            }
        }
    }
    for (index, check) in checks.iter().enumerate() {
        if check.is_status() {
            continue;
        }
        if let Err(message) = check.run(response, json.as_ref(), grpc) {
            return Verdict::CheckFailed { index, message };
        }
    }
    Verdict::Pass
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Source;

    fn response(status: u16, body: &[u8]) -> Response<'_> {
        Response {
            status,
            headers: &[],
            body,
        }
    }

    fn json_check(path: &str, equals: Option<serde_json::Value>) -> Check {
        Check::Json {
            path: JsonPath::parse(path).unwrap(),
            equals,
        }
    }

    #[test]
    fn status_matches_exact_lists_and_classes() {
        assert!(StatusMatch::Exact(404).accepts(404));
        assert!(!StatusMatch::Exact(404).accepts(200));
        assert!(StatusMatch::AnyOf(vec![200, 404]).accepts(404));
        assert!(StatusMatch::Class(2).accepts(204));
        assert!(!StatusMatch::Class(2).accepts(301));
    }

    #[test]
    fn without_a_status_check_400_and_above_fail_and_with_one_the_check_decides() {
        let mut values = vec![];
        assert_eq!(
            judge(&[], &[], &response(200, b""), &mut values),
            Verdict::Pass
        );
        assert_eq!(
            judge(&[], &[], &response(404, b""), &mut values),
            Verdict::BadStatus(404)
        );
        let expect_404 = [Check::Status(StatusMatch::Exact(404))];
        assert_eq!(
            judge(&expect_404, &[], &response(404, b""), &mut values),
            Verdict::Pass
        );
        assert_eq!(
            judge(&expect_404, &[], &response(200, b""), &mut values),
            Verdict::CheckFailed {
                index: 0,
                message: "status 404 expected, got 200".into()
            }
        );
    }

    #[test]
    fn body_and_json_checks_and_captures_in_order() {
        let checks = [
            Check::BodyContains("ok".into()),
            json_check("$.n", Some(serde_json::json!(1))),
            json_check("$.ok", None),
        ];
        let captures = [Capture {
            var: "TOKEN".into(),
            slot: 0,
            source: Source::Json(JsonPath::parse("$.token").unwrap()),
        }];
        let mut values = vec![String::new()];
        let good = br#"{"ok":true,"n":1.0,"token":"abc"}"#;
        assert_eq!(
            judge(&checks, &captures, &response(200, good), &mut values),
            Verdict::Pass
        );
        assert_eq!(values[0], "abc");

        let no_token = br#"{"ok":true,"n":1}"#;
        assert_eq!(
            judge(&checks, &captures, &response(200, no_token), &mut values),
            Verdict::CheckFailed {
                index: 3,
                message: "capture TOKEN: $.token not found".into()
            }
        );
        let wrong_n = br#"{"ok":true,"n":2,"token":"x"}"#;
        assert_eq!(
            judge(&checks, &captures, &response(200, wrong_n), &mut values),
            Verdict::CheckFailed {
                index: 1,
                message: "$.n is 2, expected 1".into()
            }
        );
        assert_eq!(
            assertion_names(&checks, &captures),
            [
                "body contains \"ok\"",
                "$.n == 1",
                "$.ok exists",
                "capture TOKEN"
            ]
        );
        let not_json = judge(&checks[2..], &[], &response(200, b"ok"), &mut values);
        assert!(
            matches!(not_json, Verdict::CheckFailed { message, .. } if message.contains("not JSON"))
        );
    }
}
