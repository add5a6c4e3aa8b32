//! Incremental HTTP/1.1 response parser, fed whatever each read returned.
//!
//! It finds where one response ends (RFC 9112 section 6): Content-Length, chunked, or the end
//! of the connection; skips 1xx interim responses; knows that HEAD, 204 and 304 have no body;
//! and says whether the server will close the connection. Bodies are skipped, never copied:
//! a load generator only needs their length. Header bytes are copied only when the header
//! block is split across reads, into a buffer whose capacity is kept between responses.
//!
//! This file holds the parser's state machine and what it returns; the header block (status,
//! framing headers, interim responses) is read in `head`, a chunked body in `chunked`. It does
//! no I/O and keeps no clock.

mod chunked;
#[cfg(test)]
mod conformance;
mod head;
#[cfg(test)]
mod tests;

use chunked::Chunked;

/// Header blocks larger than this are refused as malformed.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Feed more bytes (or call [`ResponseParser::eof`] if the peer closed).
    NeedMore,
    /// One full response ended after `consumed` bytes of the last input.
    Complete(Response),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The server will close the connection after this response.
    pub close: bool,
    /// Both Content-Length and Transfer-Encoding framed it: the connection must not be
    /// reused (RFC 9112 6.3), though the server announced no close.
    pub ambiguous_framing: bool,
    pub consumed: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed response: {0}")]
pub struct Malformed(pub &'static str);

#[derive(Debug)]
enum State {
    Head,
    /// Bytes of body still to come.
    Length(u64),
    Chunked(Chunked),
    /// No framing: the body runs until the server closes.
    UntilClose,
}

#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// Header bytes carried over from earlier reads.
    partial_head: Vec<u8>,
    request_is_head: bool,
    status: u16,
    close: bool,
    /// The current response came with both Content-Length and Transfer-Encoding.
    ambiguous_framing: bool,
    /// Any byte of the current response seen yet (tells an idle close from a cut-off one).
    started: bool,
    /// A `100 Continue` came before the current response: a request sent with `Expect:
    /// 100-continue` may now send its body.
    continued: bool,
    /// Read the next final response's `Alt-Svc` fields (see [`ResponseParser::watch_alt_svc`]).
    alt_svc_watch: bool,
    /// The `Alt-Svc` fields read, joined, until taken.
    alt_svc: Option<String>,
    /// The last header block parsed in full, and what it said (see `head::LastHead`).
    last_head: head::LastHead,
}

impl ResponseParser {
    pub fn new(request_is_head: bool) -> Self {
        ResponseParser {
            state: State::Head,
            partial_head: Vec::new(),
            request_is_head,
            status: 0,
            close: false,
            ambiguous_framing: false,
            started: false,
            continued: false,
            alt_svc_watch: false,
            alt_svc: None,
            last_head: head::LastHead::default(),
        }
    }

    /// Reads the `Alt-Svc` fields of the next final response (a connection's first: the
    /// server's advertisement of HTTP/3), kept for [`ResponseParser::take_alt_svc`]. Off by
    /// default: the other responses' fields are not looked at.
    pub fn watch_alt_svc(&mut self) {
        self.alt_svc_watch = true;
    }

    /// The `Alt-Svc` value the watched response carried, if any.
    #[inline]
    pub fn take_alt_svc(&mut self) -> Option<String> {
        self.alt_svc.take()
    }

    /// Prepares for the next response on the same connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.partial_head.clear();
        self.status = 0;
        self.close = false;
        self.ambiguous_framing = false;
        self.started = false;
        self.continued = false;
    }

    /// The next request on this connection is (or is not) a HEAD, whose response has no
    /// body whatever its headers say (scenario steps mix methods on one connection).
    pub fn set_request_is_head(&mut self, is_head: bool) {
        self.request_is_head = is_head;
    }

    /// True once a `100 Continue` has arrived ahead of the current response (other 1xx, such
    /// as 103 Early Hints, are skipped without it).
    pub fn continued(&self) -> bool {
        self.continued
    }

    /// True once any byte of the current response has arrived.
    pub fn started(&self) -> bool {
        self.started
    }

    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, Malformed> {
        if !data.is_empty() {
            self.started = true;
        }
        let mut pos = 0;
        loop {
            match &mut self.state {
                State::Head => match self.parse_head(&data[pos..])? {
                    Some(used) => {
                        pos += used;
                        // `parse_head` has set the next state; a bodiless response is done.
                        if let State::Length(0) = self.state {
                            return Ok(self.complete(pos));
                        }
                    }
                    None => return Ok(Progress::NeedMore),
                },
                State::Length(remaining) => {
                    let take = (*remaining).min((data.len() - pos) as u64);
                    *remaining -= take;
                    pos += take as usize;
                    if *remaining == 0 {
                        return Ok(self.complete(pos));
                    }
                    return Ok(Progress::NeedMore);
                }
                State::Chunked(chunked) => {
                    pos += chunked.advance(&data[pos..])?;
                    if chunked.done() {
                        return Ok(self.complete(pos));
                    }
                    return Ok(Progress::NeedMore);
                }
                State::UntilClose => return Ok(Progress::NeedMore),
            }
        }
    }

    /// The peer closed the connection. A body that runs until close is then complete;
    /// anything else was cut off.
    pub fn eof(&mut self) -> Option<Response> {
        match self.state {
            State::UntilClose => Some(Response {
                status: self.status,
                close: true,
                ambiguous_framing: self.ambiguous_framing,
                consumed: 0,
            }),
            _ => None,
        }
    }

    fn complete(&mut self, consumed: usize) -> Progress {
        let response = Response {
            status: self.status,
            close: self.close,
            ambiguous_framing: self.ambiguous_framing,
            consumed,
        };
        self.reset();
        Progress::Complete(response)
    }
}
