//! A step's HTTP/2 or HTTP/3 response as its captures and checks see it: the header fields
//! the protocol's library parsed, and the body only when the step needs it or it is
//! compressed (to weigh it decoded), at most `MAX_KEPT_BYTES` as over HTTP/1.1. Judged by
//! `judge`, as HTTP/1.1's responses are. Buffers keep their capacity from one response to the
//! next.

use super::super::super::exchange::FieldSink;
use super::super::judge::{is_compressed, judge, Kept, Read, MAX_KEPT_BYTES};
use loadlab_scenario::{CookieJar, Step};

#[derive(Default)]
pub(in crate::engine) struct Fields {
    headers: http::HeaderMap,
    keep_body: bool,
    body: Vec<u8>,
    /// Decompressed body.
    decoded: Vec<u8>,
}

impl Fields {
    /// Ready for the next response; `keep_body` when the step's checks read the body.
    pub fn reset(&mut self, keep_body: bool) {
        self.headers.clear();
        self.body.clear();
        self.keep_body = keep_body;
    }
}

impl FieldSink for Fields {
    fn head(&mut self, headers: http::HeaderMap) {
        if !self.keep_body {
            self.keep_body = headers
                .get_all(http::header::CONTENT_ENCODING)
                .iter()
                .any(|v| is_compressed(v.as_bytes()));
        }
        self.headers = headers;
    }

    fn data(&mut self, chunk: &[u8]) {
        if self.keep_body {
            let room = MAX_KEPT_BYTES.saturating_sub(self.body.len());
            self.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }
}

impl Kept for Fields {
    /// `received`: the response's bytes as the protocol counts them (HTTP/2: its share of
    /// the frames; HTTP/3: DATA payload).
    fn read(
        &mut self,
        step: &Step,
        status: u16,
        received: u64,
        values: &mut [String],
        jar: &mut CookieJar,
    ) -> Read {
        let headers = &self.headers;
        let fields = || {
            headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes()))
        };
        judge(
            step,
            status,
            fields,
            &self.body,
            received,
            values,
            jar,
            &mut self.decoded,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_kept_when_asked_or_compressed_and_never_past_the_cap() {
        let mut f = Fields::default();
        f.reset(false);
        f.head(http::HeaderMap::new());
        f.data(b"not kept");
        assert!(f.body.is_empty());
        f.reset(false);
        let mut compressed = http::HeaderMap::new();
        compressed.insert(http::header::CONTENT_ENCODING, "gzip".parse().unwrap());
        f.head(compressed);
        f.data(b"xy");
        f.data(b"z");
        assert_eq!(f.body, b"xyz", "a compressed body is kept");
        f.reset(true);
        assert!(f.headers.is_empty(), "the last response's fields are gone");
        f.head(http::HeaderMap::new());
        f.data(&vec![7u8; MAX_KEPT_BYTES - 1]);
        f.data(b"ab");
        assert_eq!(f.body.len(), MAX_KEPT_BYTES);
    }
}
