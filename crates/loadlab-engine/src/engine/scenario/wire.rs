//! A scenario step's HTTP/1.1 response as its captures and checks see it. While the response
//! arrives, [`Wire`] keeps its header block, and its body only when the step needs it (a JSON
//! path, a regex, a body check) or the body is compressed (to weigh it decoded). Afterwards
//! [`Wire::read`] parses the head, de-chunks the body and hands both to `judge`, which
//! HTTP/2 and HTTP/3 share. Buffers keep their capacity from one response to the next, so a
//! steady virtual user does not allocate here.

use super::super::exchange::Sink;
use super::judge::{judge, Kept, Read, MAX_KEPT_BYTES};
use loadlab_scenario::{CookieJar, Step};

#[derive(Default)]
pub(super) struct Wire {
    raw: Vec<u8>,
    /// Where the header block ends in `raw`, once seen.
    head_end: Option<usize>,
    keep_body: bool,
    /// De-chunked body.
    body: Vec<u8>,
    /// Decompressed body.
    decoded: Vec<u8>,
}

impl Sink for Wire {
    #[inline]
    fn bytes(&mut self, data: &[u8]) {
        if self.head_end.is_some() && !self.keep_body {
            return;
        }
        let room = MAX_KEPT_BYTES.saturating_sub(self.raw.len());
        let mut from = self.raw.len().saturating_sub(3);
        self.raw.extend_from_slice(&data[..data.len().min(room)]);
        while self.head_end.is_none() {
            let Some(i) = find(&self.raw[from..], b"\r\n\r\n") else {
                break;
            };
            let end = from + i + 4;
            if is_interim(&self.raw) {
                // 100 Continue, 103 Early Hints: the response the step judges follows.
                self.raw.drain(..end);
                from = 0;
                continue;
            }
            self.head_end = Some(end);
            if !self.keep_body && has_header(&self.raw[..end], b"content-encoding") {
                self.keep_body = true;
            }
        }
    }
}

/// True when `head` starts with an interim (1xx, not 101) status line.
fn is_interim(head: &[u8]) -> bool {
    head.len() > 12
        && head.starts_with(b"HTTP/1.")
        && head[9] == b'1'
        && head[10..12].iter().all(u8::is_ascii_digit)
        && &head[9..12] != b"101"
}

impl Wire {
    /// Ready for the next response; `keep_body` when the step's checks read the body.
    pub fn reset(&mut self, keep_body: bool) {
        self.raw.clear();
        self.head_end = None;
        self.keep_body = keep_body;
    }
}

impl Kept for Wire {
    /// `status` from the engine's parser, `received` the response's bytes on the wire.
    fn read(
        &mut self,
        step: &Step,
        status: u16,
        received: u64,
        values: &mut [String],
        jar: &mut CookieJar,
    ) -> Read {
        let Wire {
            raw,
            head_end,
            body,
            decoded,
            ..
        } = self;
        let head_end = head_end.unwrap_or(raw.len());
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut slots);
        // The engine's parser already accepted this header block.
        let _ = parsed.parse(&raw[..head_end]);
        let chunked = parsed.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("transfer-encoding")
                && contains_ignore_case(h.value, b"chunked")
        });
        let mut body_bytes: &[u8] = &raw[head_end..];
        if chunked && !body_bytes.is_empty() {
            dechunk(body_bytes, body);
            body_bytes = body;
        }
        let fields = || parsed.headers.iter().map(|h| (h.name, h.value));
        judge(
            step, status, fields, body_bytes, received, values, jar, decoded,
        )
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Whether a header block has a header of this (lowercase) name.
fn has_header(head: &[u8], name: &[u8]) -> bool {
    head.split(|b| *b == b'\n').skip(1).any(|line| {
        line.len() > name.len()
            && line[name.len()] == b':'
            && line[..name.len()].eq_ignore_ascii_case(name)
    })
}

/// The data of a chunked body (already checked by the engine's parser) into `out`.
fn dechunk(mut data: &[u8], out: &mut Vec<u8>) {
    out.clear();
    while let Some(line_end) = find(data, b"\r\n") {
        let size_text = data[..line_end].split(|b| *b == b';').next().unwrap_or(&[]);
        let size = std::str::from_utf8(size_text)
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        data = &data[line_end + 2..];
        if size == 0 {
            return;
        }
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        data = &data[take..];
        data = data.strip_prefix(b"\r\n").unwrap_or(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined() {
        let mut out = Vec::new();
        dechunk(b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", &mut out);
        assert_eq!(out, b"hello world");
    }

    #[test]
    fn the_head_is_kept_and_the_body_only_when_asked_or_compressed() {
        let mut w = Wire::default();
        w.reset(false);
        w.bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r");
        w.bytes(b"\nhello");
        assert_eq!(w.head_end, Some(38));
        w.bytes(b"more");
        assert_eq!(w.raw.len(), 43, "nothing kept past the head");
        w.reset(false);
        w.bytes(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nxy");
        w.bytes(b"z");
        assert!(w.raw.ends_with(b"xyz"), "a compressed body is kept");
        assert!(has_header(
            b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\n\r\n",
            b"content-encoding"
        ));
        assert!(!has_header(
            b"HTTP/1.1 200 OK\r\nX-Content-Encoding: br\r\n\r\n",
            b"content-encoding"
        ));
    }

    #[test]
    fn interim_responses_are_not_the_head_a_step_judges() {
        let mut w = Wire::default();
        w.reset(false);
        w.bytes(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r");
        assert_eq!(w.head_end, None);
        w.bytes(b"\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        assert!(
            w.raw.starts_with(b"HTTP/1.1 201 Created\r\n"),
            "{:?}",
            w.raw
        );
        assert_eq!(w.head_end, Some(w.raw.len()));
        assert!(!is_interim(b"HTTP/1.1 101 Switching Protocols\r\n\r\n"));
        assert!(!is_interim(b"HTTP/1.1 200 OK\r\n\r\n"));
    }
}
