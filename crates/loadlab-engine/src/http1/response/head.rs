//! The header block of a response: parsed in place (or from the bytes carried over when it
//! is split across reads), its framing headers read (Content-Length, Transfer-Encoding,
//! Connection), interim 1xx responses skipped, and the body state chosen from them.
//!
//! A server answers the same request with the same header block, byte for byte, except where
//! a field changes (nginx's `Date`, once a second). So the last block parsed in full is kept
//! with what it said ([`LastHead`]), and a block that repeats it is recognised by comparing
//! bytes instead of parsed again: the outcome is that of parsing, since parsing is a function
//! of the block's bytes alone. Measured with callgrind against nginx (13-byte body, 5
//! header fields, `loadlab run -t1 -c50 --no-busy-poll`, 20,000 more requests): httparse and
//! the framing headers cost 1,927 of the 4,332 user-space instructions of a request; a
//! repeated block costs a comparison of its ~160 bytes (see docs/generator.md).

use super::chunked::Chunked;
use super::{Malformed, ResponseParser, State, MAX_HEADERS, MAX_HEAD_BYTES};
use std::mem::MaybeUninit;

impl ResponseParser {
    /// Parses a header block. Returns how many bytes of `data` it used when the block is
    /// complete (and sets the body state), `None` when more bytes are needed.
    pub(super) fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, Malformed> {
        let carried = self.partial_head.len();
        // The watch reads fields the memo does not keep: a watched block is parsed.
        if carried == 0 && !self.alt_svc_watch {
            if let Some((len, info)) = self.last_head.repeated_in(data) {
                #[cfg(test)]
                {
                    self.last_head.hits += 1;
                }
                self.apply_head(info);
                return Ok(Some(len));
            }
        }
        if carried > 0 {
            self.partial_head.extend_from_slice(data);
        }
        // Borrow either the fresh bytes (the common case: no copy) or the carried-over block.
        let parsed = {
            let buf: &[u8] = if carried > 0 {
                &self.partial_head
            } else {
                data
            };
            // Uninitialised header slots: initialising 64 of them per response showed up as
            // a memset in profiles of the hot path.
            let mut slots = [const { MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
            let mut response = httparse::Response::new(&mut []);
            match httparse::ParserConfig::default().parse_response_with_uninit_headers(
                &mut response,
                buf,
                &mut slots,
            ) {
                Ok(httparse::Status::Complete(len)) => {
                    let info = head_info(&response)?;
                    self.last_head.keep(&buf[..len], info);
                    // Interim responses (1xx) are not the server's answer: the watch waits
                    // for the final one.
                    if self.alt_svc_watch && !(100..200).contains(&info.status) {
                        self.alt_svc_watch = false;
                        self.alt_svc = crate::alt_svc::joined(
                            response
                                .headers
                                .iter()
                                .filter(|h| h.name.eq_ignore_ascii_case("alt-svc"))
                                .map(|h| h.value),
                        );
                    }
                    Some((len, info))
                }
                Ok(httparse::Status::Partial) => None,
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(Malformed("more than 64 header fields"))
                }
                Err(_) => return Err(Malformed("invalid status line or header field")),
            }
        };
        let Some((len, info)) = parsed else {
            if carried == 0 {
                self.partial_head.extend_from_slice(data);
            }
            if self.partial_head.len() > MAX_HEAD_BYTES {
                return Err(Malformed("header block larger than 64 KiB"));
            }
            return Ok(None);
        };
        self.partial_head.clear();
        self.apply_head(info);
        // The header block ended inside `data`: bytes before it came from earlier reads.
        Ok(Some(len - carried))
    }

    fn apply_head(&mut self, info: HeadInfo) {
        self.status = info.status;
        if (100..200).contains(&info.status) && info.status != 101 {
            // Interim response (100 Continue, 103 Early Hints): the real one follows.
            self.continued |= info.status == 100;
            self.state = State::Head;
            return;
        }
        self.close = info.close;
        let bodiless =
            self.request_is_head || info.status == 204 || info.status == 304 || info.status == 101;
        self.state = if bodiless {
            if info.status == 101 {
                self.close = true; // we never speak the upgraded protocol
            }
            State::Length(0)
        } else if let Some(chunked) = info.transfer_encoding {
            // Transfer-Encoding overrides Content-Length; a response with both may be an
            // attempt at response splitting, so its connection is not reused (RFC 9112 6.3).
            self.ambiguous_framing = info.content_length.is_some();
            if chunked {
                State::Chunked(Chunked::default())
            } else {
                self.close = true;
                State::UntilClose
            }
        } else if let Some(len) = info.content_length {
            State::Length(len)
        } else {
            self.close = true;
            State::UntilClose
        };
    }
}

/// The last header block parsed in full on this connection (up to [`LastHead::MAX_BYTES`]),
/// with what it said.
#[derive(Debug, Default)]
pub(super) struct LastHead {
    /// Empty when none is kept. Its capacity stays between blocks.
    bytes: Vec<u8>,
    info: Option<HeadInfo>,
    /// Blocks recognised as repeats (for the tests: that the memo is used at all).
    #[cfg(test)]
    pub(super) hits: u64,
}

impl LastHead {
    /// Longer blocks are not kept: a connection's memo stays within 1 KiB (10,000
    /// connections, 10 MB at most), and a long block's parse is no longer small beside it.
    const MAX_BYTES: usize = 1024;

    /// When `data` opens with the kept block: its length and what it said. The block ends
    /// with its blank line, so equal bytes up to there are the same block whatever follows.
    #[inline]
    fn repeated_in(&self, data: &[u8]) -> Option<(usize, HeadInfo)> {
        let n = self.bytes.len();
        let info = self.info?;
        (data.len() >= n && data[..n] == self.bytes[..]).then_some((n, info))
    }

    fn keep(&mut self, block: &[u8], info: HeadInfo) {
        self.bytes.clear();
        self.info = None;
        if block.len() <= Self::MAX_BYTES {
            self.bytes.extend_from_slice(block);
            self.info = Some(info);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct HeadInfo {
    status: u16,
    close: bool,
    content_length: Option<u64>,
    /// `Some(true)` when chunked is the final transfer coding, `Some(false)` for another one.
    transfer_encoding: Option<bool>,
}

fn head_info(response: &httparse::Response) -> Result<HeadInfo, Malformed> {
    let status = response.code.ok_or(Malformed("missing status code"))?;
    let http10 = response.version == Some(0);
    let mut close = http10;
    let mut content_length = None;
    let mut transfer_encoding = None;
    for h in response.headers.iter() {
        // Compare lengths first: most headers (Date, Server, Content-Type) are none of these.
        let name = h.name.as_bytes();
        let is = |wanted: &str| {
            name.len() == wanted.len() && name.eq_ignore_ascii_case(wanted.as_bytes())
        };
        if is("content-length") {
            let len = parse_decimal(h.value.trim_ascii())
                .ok_or(Malformed("Content-Length is not a number"))?;
            if content_length.is_some_and(|prev| prev != len) {
                return Err(Malformed("conflicting Content-Length values"));
            }
            content_length = Some(len);
        } else if is("transfer-encoding") {
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or(b"");
            transfer_encoding = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if is("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if http10 && token.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        }
    }
    Ok(HeadInfo {
        status,
        close,
        content_length,
        transfer_encoding,
    })
}

/// Digits only, no sign, no overflow; `str::parse` costs several times more on the hot path.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        if !d.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?.checked_add((d - b'0') as u64)
    })
}
