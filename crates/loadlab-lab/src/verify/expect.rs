//! What a response must look like, and the comparison that turns a [`Reply`] into
//! [`Check`]s. Every response is held to the contract's common headers; each endpoint adds
//! its status, media type and body.

use super::client::Reply;
use super::{Check, Outcome};
use bytes::Bytes;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, DATE, SERVER, TRANSFER_ENCODING};
use std::time::Duration;

/// What the body must be.
#[derive(Debug, Clone)]
pub enum BodyRule {
    Exact(Bytes),
    /// Any non-empty body (400 messages are not verified word for word).
    NonEmpty,
    /// Not checked (413).
    Any,
}

/// The expectation for one request.
#[derive(Debug, Clone)]
pub struct Expect {
    pub status: u16,
    /// Media type without parameters; `None` skips the check.
    pub media_type: Option<&'static str>,
    pub body: BodyRule,
    /// A lower bound on the response time (`/delay`, `/block`): a timer never fires early.
    pub min_elapsed: Option<Duration>,
}

impl Expect {
    pub fn ok(media_type: &'static str, body: impl Into<Bytes>) -> Self {
        Expect {
            status: 200,
            media_type: Some(media_type),
            body: BodyRule::Exact(body.into()),
            min_elapsed: None,
        }
    }

    pub fn bad_request() -> Self {
        Expect {
            status: 400,
            media_type: Some("text/plain"),
            body: BodyRule::NonEmpty,
            min_elapsed: None,
        }
    }

    pub fn status_only(status: u16) -> Self {
        Expect {
            status,
            media_type: None,
            body: BodyRule::Any,
            min_elapsed: None,
        }
    }
}

pub const TEXT: &str = "text/plain";
pub const HTML: &str = "text/html";
pub const JSON: &str = "application/json";
pub const OCTETS: &str = "application/octet-stream";

/// Compares `reply` with `expect`, pushing one check per aspect.
pub fn compare(endpoint: &str, reply: &Reply, expect: &Expect, checks: &mut Vec<Check>) {
    let mut push = |what: &str, result: Result<(), (String, String)>| {
        checks.push(Check {
            endpoint: endpoint.to_string(),
            what: what.to_string(),
            outcome: match result {
                Ok(()) => Outcome::Pass,
                Err((expected, got)) => Outcome::Fail { expected, got },
            },
        })
    };
    push(
        "status",
        same(expect.status.to_string(), reply.status.to_string()),
    );
    let header = |name| reply.headers.get(name).and_then(|v| v.to_str().ok());
    push(
        "Server header",
        match header(SERVER) {
            Some(v) if !v.trim().is_empty() => Ok(()),
            Some(_) => Err(("a non-empty Server header".into(), "an empty one".into())),
            None => Err(("a Server header".into(), "none".into())),
        },
    );
    push(
        "Date header",
        match header(DATE) {
            Some(v) if is_imf_fixdate(v) => Ok(()),
            Some(v) => Err((
                "an IMF-fixdate like \"Sun, 06 Nov 1994 08:49:37 GMT\"".into(),
                format!("{v:?}"),
            )),
            None => Err(("a Date header".into(), "none".into())),
        },
    );
    let chunked =
        header(TRANSFER_ENCODING).is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    push(
        "framing",
        if chunked || header(CONTENT_LENGTH).is_some() {
            Ok(())
        } else {
            Err((
                "Content-Length or Transfer-Encoding: chunked".into(),
                "neither (the body was delimited by closing the connection)".into(),
            ))
        },
    );
    if let Some(media_type) = expect.media_type {
        push(
            "Content-Type",
            content_type_matches(media_type, header(CONTENT_TYPE)),
        );
    }
    match &expect.body {
        BodyRule::Exact(bytes) if *bytes != reply.body => {
            push("body", Err(diff(bytes, &reply.body)))
        }
        BodyRule::NonEmpty if reply.body.is_empty() => push(
            "body",
            Err(("a non-empty message".into(), "an empty body".into())),
        ),
        _ => push("body", Ok(())),
    }
    if let Some(min) = expect.min_elapsed {
        push(
            "timing",
            if reply.elapsed >= min {
                Ok(())
            } else {
                Err((
                    format!("a response after at least {} ms", min.as_millis()),
                    format!("one after {} ms", reply.elapsed.as_millis()),
                ))
            },
        );
    }
}

fn same(expected: String, got: String) -> Result<(), (String, String)> {
    if expected == got {
        Ok(())
    } else {
        Err((expected, got))
    }
}

/// The media type must match (case-insensitively); the only parameter allowed is
/// `charset=utf-8`.
pub fn content_type_matches(media_type: &str, got: Option<&str>) -> Result<(), (String, String)> {
    let expected = format!("{media_type} (optionally with ; charset=utf-8)");
    let Some(value) = got else {
        return Err((expected, "no Content-Type".into()));
    };
    let mut parts = value.split(';').map(str::trim);
    let type_ok = parts
        .next()
        .is_some_and(|t| t.eq_ignore_ascii_case(media_type));
    let params_ok = parts.all(|p| {
        p.is_empty()
            || p.replace(' ', "").eq_ignore_ascii_case("charset=utf-8")
            || p.replace(' ', "").eq_ignore_ascii_case("charset=\"utf-8\"")
    });
    if type_ok && params_ok {
        Ok(())
    } else {
        Err((expected, format!("{value:?}")))
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`, exactly.
pub fn is_imf_fixdate(value: &str) -> bool {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let b = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    b.len() == 29
        && value.is_ascii()
        && DAYS.contains(&&value[0..3])
        && &value[3..5] == ", "
        && digits(5..7)
        && b[7] == b' '
        && MONTHS.contains(&&value[8..11])
        && b[11] == b' '
        && digits(12..16)
        && b[16] == b' '
        && digits(17..19)
        && b[19] == b':'
        && digits(20..22)
        && b[22] == b':'
        && digits(23..25)
        && &value[25..] == " GMT"
}

/// A readable description of two different bodies: both in full when short, otherwise their
/// lengths and the neighbourhood of the first difference.
pub fn diff(expected: &[u8], got: &[u8]) -> (String, String) {
    const SHORT: usize = 100;
    if expected.len() <= SHORT && got.len() <= SHORT {
        return (show(expected), show(got));
    }
    let at = expected
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(expected.len().min(got.len()));
    let window = |bytes: &[u8]| {
        let start = at.saturating_sub(20);
        let end = (at + 40).min(bytes.len());
        show(&bytes[start.min(end)..end])
    };
    (
        format!(
            "{} bytes; from byte {}: {}",
            expected.len(),
            at.saturating_sub(20),
            window(expected)
        ),
        format!(
            "{} bytes; from byte {}: {}",
            got.len(),
            at.saturating_sub(20),
            window(got)
        ),
    )
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imf_fixdate() {
        assert!(is_imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT"));
        assert!(!is_imf_fixdate("Sunday, 06-Nov-94 08:49:37 GMT"));
        assert!(!is_imf_fixdate("Sun, 06 Nov 1994 08:49:37 UTC"));
        assert!(!is_imf_fixdate("Sun, 6 Nov 1994 08:49:37 GMT"));
    }

    #[test]
    fn content_types() {
        assert!(content_type_matches("text/plain", Some("text/plain")).is_ok());
        assert!(content_type_matches("text/plain", Some("Text/Plain; charset=UTF-8")).is_ok());
        assert!(content_type_matches("text/plain", Some("text/html")).is_err());
        assert!(
            content_type_matches("application/json", Some("application/json; charset=latin1"))
                .is_err()
        );
        assert!(content_type_matches("application/json", None).is_err());
    }

    #[test]
    fn diffs_point_at_the_first_difference() {
        assert_eq!(
            diff(b"Hello, World!", b"Hello World!"),
            ("\"Hello, World!\"".into(), "\"Hello World!\"".into())
        );
        let a = vec![b'a'; 300];
        let mut b = a.clone();
        b[200] = b'b';
        let (e, g) = diff(&a, &b);
        assert!(e.starts_with("300 bytes; from byte 180:"), "{e}");
        assert!(g.contains('b'), "{g}");
    }
}
