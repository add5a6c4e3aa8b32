//! libFuzzer target for the HTTP/1.1 response parser (`loadlab_engine::http1::ResponseParser`).
//!
//! The input's first byte chooses the request (bit 0: HEAD) and the second the size of the
//! reads the bytes arrive in (1 to 256); the rest is what the server sent. The parser is fed
//! the bytes twice, whole and in reads of that size, and must:
//! - never panic (libFuzzer reports a crash) and never claim more bytes than it was given;
//! - end every response at the same offset of the stream, with the same status, however the
//!   bytes were split, and fail (or not) the same way: a response's framing does not depend
//!   on how the network cut it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loadlab_engine::http1::{Progress, ResponseParser};

/// What the parser made of a stream: each response's status and end offset, whether it
/// ended in an error, and the status of a last response whose body runs until the close.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    responses: Vec<(u16, usize)>,
    failed: bool,
    until_close: Option<u16>,
}

fn parse(stream: &[u8], head: bool, read: usize) -> Outcome {
    let mut parser = ResponseParser::new(head);
    let mut out = Outcome {
        responses: Vec::new(),
        failed: false,
        until_close: None,
    };
    let mut start = 0;
    'reads: while start < stream.len() {
        let end = (start + read).min(stream.len());
        let mut pos = start;
        while pos < end {
            let piece = &stream[pos..end];
            match parser.feed(piece) {
                Ok(Progress::NeedMore) => break,
                Ok(Progress::Complete(r)) => {
                    assert!(
                        r.consumed <= piece.len(),
                        "consumed {} of a {}-byte read",
                        r.consumed,
                        piece.len()
                    );
                    // Else the next feed of the same bytes would loop for ever.
                    assert!(r.consumed > 0, "a response ended without using a byte");
                    pos += r.consumed;
                    out.responses.push((r.status, pos));
                }
                Err(_) => {
                    out.failed = true;
                    break 'reads;
                }
            }
        }
        start = end;
    }
    if !out.failed {
        out.until_close = parser.eof().map(|r| r.status);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let head = data[0] & 1 == 1;
    let read = usize::from(data[1]) + 1;
    let stream = &data[2..];
    let whole = parse(stream, head, stream.len().max(1));
    let split = parse(stream, head, read);
    assert_eq!(whole, split, "read size {read}");
});
