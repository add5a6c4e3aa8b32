//! The HTTP/1.1 response parser against a model, on generated responses: every framing
//! (Content-Length, chunked with extensions and trailers, until close, 1xx before the final
//! response, bodiless statuses, HEAD), split at arbitrary byte boundaries; then mutated
//! (flipped bytes, truncations, huge numbers): the parser never panics, never claims bytes
//! it was not given, and always ends in a response, a need for more, or a classified error.
//!
//! CI runs a bounded number of cases (PROPTEST_CASES, 256 by default here);
//! `bash bench/fuzz-parser.sh` runs many more.

use loadlab_engine::http1::{Progress, ResponseParser};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Framing {
    Length,
    Chunked {
        chunk: usize,
        extension: bool,
        trailer: bool,
    },
    UntilClose,
}

#[derive(Debug, Clone)]
struct Model {
    interim: Vec<u16>,
    status: u16,
    head_request: bool,
    framing: Framing,
    body: Vec<u8>,
    extra_headers: Vec<(String, String)>,
}

impl Model {
    fn bodiless(&self) -> bool {
        self.head_request || self.status == 204 || self.status == 304
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for code in &self.interim {
            out.extend_from_slice(format!("HTTP/1.1 {code} Interim\r\n\r\n").as_bytes());
        }
        out.extend_from_slice(format!("HTTP/1.1 {} Status\r\n", self.status).as_bytes());
        for (n, v) in &self.extra_headers {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        match &self.framing {
            Framing::Length => {
                out.extend_from_slice(
                    format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes(),
                );
                if !self.bodiless() {
                    out.extend_from_slice(&self.body);
                }
            }
            Framing::Chunked {
                chunk,
                extension,
                trailer,
            } => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                if !self.bodiless() {
                    for piece in self.body.chunks((*chunk).max(1)) {
                        out.extend_from_slice(format!("{:x}", piece.len()).as_bytes());
                        if *extension {
                            out.extend_from_slice(b";name=value");
                        }
                        out.extend_from_slice(b"\r\n");
                        out.extend_from_slice(piece);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"0\r\n");
                    if *trailer {
                        out.extend_from_slice(b"X-Trailer: yes\r\n");
                    }
                    out.extend_from_slice(b"\r\n");
                }
            }
            Framing::UntilClose => {
                out.extend_from_slice(b"\r\n");
                if !self.bodiless() {
                    out.extend_from_slice(&self.body);
                }
            }
        }
        out
    }
}

fn model() -> impl Strategy<Value = Model> {
    let status = prop_oneof![
        Just(200u16),
        Just(201),
        Just(204),
        Just(301),
        Just(304),
        Just(404),
        Just(500),
        Just(503)
    ];
    let framing = prop_oneof![
        Just(Framing::Length),
        (1usize..64, any::<bool>(), any::<bool>()).prop_map(|(chunk, extension, trailer)| {
            Framing::Chunked {
                chunk,
                extension,
                trailer,
            }
        }),
        Just(Framing::UntilClose),
    ];
    (
        prop::collection::vec(prop_oneof![Just(100u16), Just(103)], 0..3),
        status,
        any::<bool>(),
        framing,
        prop::collection::vec(any::<u8>(), 0..300),
        prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,10}", "[ -~]{0,20}"), 0..4),
    )
        .prop_map(
            |(interim, status, head_request, framing, body, extra)| Model {
                interim,
                status,
                head_request,
                framing,
                body,
                extra_headers: extra
                    .into_iter()
                    .filter(|(n, _)| {
                        let n = n.to_ascii_lowercase();
                        n != "content-length" && n != "transfer-encoding" && n != "connection"
                    })
                    .map(|(n, v)| (n, v.trim().to_string()))
                    .collect(),
            },
        )
}

/// Feeds `bytes` in pieces cut at `cuts`; returns the completed response's status and where
/// it ended (offset into `bytes`), or `None` when the parser still needs more.
fn feed_split(
    parser: &mut ResponseParser,
    bytes: &[u8],
    cuts: &[usize],
) -> Result<Option<(u16, usize)>, String> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    let mut start = 0;
    for end in points {
        if end <= start {
            continue;
        }
        let piece = &bytes[start..end];
        match parser.feed(piece) {
            Ok(Progress::NeedMore) => {}
            Ok(Progress::Complete(r)) => {
                if r.consumed > piece.len() {
                    return Err(format!(
                        "consumed {} of a {}-byte piece",
                        r.consumed,
                        piece.len()
                    ));
                }
                return Ok(Some((r.status, start + r.consumed)));
            }
            Err(e) => return Err(e.to_string()),
        }
        start = end;
    }
    Ok(None)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    /// Valid responses parse as the model says, however the bytes are split.
    #[test]
    fn valid_responses_parse_as_modelled(m in model(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let bytes = m.encode();
        let mut parser = ResponseParser::new(m.head_request);
        let got = feed_split(&mut parser, &bytes, &cuts).map_err(TestCaseError::fail)?;
        let ends_by_close = matches!(m.framing, Framing::UntilClose) && !m.bodiless();
        if ends_by_close {
            prop_assert_eq!(got, None);
            let r = parser.eof().expect("a body until close ends at close");
            prop_assert_eq!(r.status, m.status);
        } else {
            prop_assert_eq!(got, Some((m.status, bytes.len())));
            // Reset for the next response: an idle close is not a response.
            prop_assert!(parser.eof().is_none());
        }
    }

    /// Mutated bytes never panic the parser and never make it claim bytes it was not given.
    #[test]
    fn mutated_responses_end_classified(
        m in model(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        truncate in prop::option::of(any::<usize>()),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut bytes = m.encode();
        for (at, byte) in flips {
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = byte;
            }
        }
        if let Some(t) = truncate {
            bytes.truncate(t % (bytes.len() + 1));
        }
        let mut parser = ResponseParser::new(m.head_request);
        // Any outcome but a panic or an overclaim is fine: `feed_split` checks the claim.
        match feed_split(&mut parser, &bytes, &cuts) {
            Err(e) if e.starts_with("consumed") => prop_assert!(false, "{}", e),
            _ => {}
        }
        let _ = parser.eof();
    }

    /// Huge or malformed numbers in the framing are errors, not overflows.
    #[test]
    fn huge_numbers_are_refused_or_bounded(digits in "[0-9a-fA-F]{1,40}", chunked in any::<bool>()) {
        let head = if chunked {
            format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{digits}\r\nabc")
        } else {
            format!("HTTP/1.1 200 OK\r\nContent-Length: {digits}\r\n\r\nabc")
        };
        let mut parser = ResponseParser::new(false);
        match parser.feed(head.as_bytes()) {
            Ok(Progress::Complete(r)) => prop_assert!(r.consumed <= head.len()),
            Ok(Progress::NeedMore) | Err(_) => {}
        }
    }
}
