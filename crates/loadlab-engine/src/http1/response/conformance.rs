//! The parser against an independent suite: llhttp's test vectors (Node.js's HTTP parser),
//! written out as data by `scripts/llhttp-response-cases.py` into `testdata/llhttp.txt`, each
//! line naming the llhttp file and case it came from. Every case must get llhttp's verdict
//! (malformed, or so many complete responses) unless it is listed in [`DIFFERENCES`] with the
//! reason this parser reads it otherwise; a listed case that agrees again fails too, so the
//! list cannot go stale.

use super::*;

/// Cases where this parser deliberately differs from llhttp, by source, and why. It reads
/// only what framing needs (status code, Content-Length, Transfer-Encoding, Connection), so
/// llhttp's checks on other bytes of the head are not its business; a load generator counts a
/// response, it does not guard an application.
const DIFFERENCES: &[(&str, &str)] = &[
    (
        "test/response/connection.md:166 HTTP/1.1 with keep-alive disabled and 204 status",
        "bytes after a response that closes the connection are never read: the engine drops \
         the connection, so the 204 counts and the rest is nobody's response",
    ),
    (
        "test/response/invalid.md:289 Only LFs present and no body",
        "RFC 9112 2.2 lets a recipient take a bare LF as a line's end in the head",
    ),
    (
        "test/response/invalid.md:329 Only LFs present",
        "RFC 9112 2.2 lets a recipient take a bare LF as a line's end in the head",
    ),
    (
        "test/response/sample.md:332 No carriage ret",
        "RFC 9112 2.2 lets a recipient take a bare LF as a line's end in the head",
    ),
    (
        "test/response/sample.md:42 RTSP response",
        "a load test of HTTP takes only HTTP/1.x answers; RTSP is a malformed response",
    ),
    (
        "test/response/sample.md:62 ICE response",
        "a load test of HTTP takes only HTTP/1.x answers; ICE is a malformed response",
    ),
    (
        "test/response/sample.md:647 HTTP version 0.9",
        "HTTP/0.9 has no status line; one claiming it is not an HTTP/1.x answer",
    ),
];

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Malformed,
    /// So many final (non-1xx) responses complete.
    Complete(usize),
}

fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b[i + 1] {
            b'r' => out.push(b'\r'),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'\\' => out.push(b'\\'),
            b'x' => {
                let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            other => panic!("unknown escape \\{}", other as char),
        }
        i += 2;
    }
    out
}

/// This parser's verdict on `input` given whole (the connection not closed: llhttp's
/// harness does not close it either).
fn verdict(input: &[u8]) -> Verdict {
    let mut p = ResponseParser::new(false);
    let mut complete = 0;
    let mut rest = input;
    while !rest.is_empty() {
        match p.feed(rest) {
            Err(_) => return Verdict::Malformed,
            Ok(Progress::NeedMore) => break,
            Ok(Progress::Complete(r)) => {
                complete += 1;
                rest = &rest[r.consumed..];
            }
        }
    }
    Verdict::Complete(complete)
}

#[test]
fn agrees_with_llhttps_test_vectors() {
    let data = include_str!("testdata/llhttp.txt");
    let mut disagreements = Vec::new();
    let mut listed_but_agreeing = Vec::new();
    let mut cases = 0;
    for line in data
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut fields = line.splitn(3, '\t');
        let (theirs, source, input) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        cases += 1;
        let expected = match theirs {
            "error" => Verdict::Malformed,
            ok => Verdict::Complete(ok.trim_start_matches("ok ").parse().unwrap()),
        };
        let ours = verdict(&unescape(input));
        let listed = DIFFERENCES.iter().any(|(s, _)| *s == source);
        match (ours == expected, listed) {
            (false, false) => {
                disagreements.push(format!("{source}: llhttp {expected:?}, ours {ours:?}"))
            }
            (true, true) => listed_but_agreeing.push(source.to_string()),
            _ => {}
        }
    }
    assert!(cases >= 70, "the data file lost its cases: {cases}");
    assert!(
        disagreements.is_empty(),
        "{} of {cases} cases disagree with llhttp:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        listed_but_agreeing.is_empty(),
        "listed as differences but agreeing now: {listed_but_agreeing:?}"
    );
}
