//! Incremental HTTP/1.1 response parser, fed whatever each read returned.
//!
//! It finds where one response ends (RFC 9112 section 6): Content-Length, chunked, or the end
//! of the connection; skips 1xx interim responses; knows that HEAD, 204 and 304 have no body;
//! and says whether the server will close the connection. Bodies are skipped, never copied:
//! a load generator only needs their length. Header bytes are copied only when the header
//! block is split across reads, into a buffer whose capacity is kept between responses.

use std::mem::MaybeUninit;

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
    /// Any byte of the current response seen yet (tells an idle close from a cut-off one).
    started: bool,
    /// A `100 Continue` came before the current response: a request sent with `Expect:
    /// 100-continue` may now send its body.
    continued: bool,
}

impl ResponseParser {
    pub fn new(request_is_head: bool) -> Self {
        ResponseParser {
            state: State::Head,
            partial_head: Vec::new(),
            request_is_head,
            status: 0,
            close: false,
            started: false,
            continued: false,
        }
    }

    /// Prepares for the next response on the same connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.partial_head.clear();
        self.status = 0;
        self.close = false;
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
                consumed: 0,
            }),
            _ => None,
        }
    }

    fn complete(&mut self, consumed: usize) -> Progress {
        let response = Response {
            status: self.status,
            close: self.close,
            consumed,
        };
        self.reset();
        Progress::Complete(response)
    }

    /// Parses a header block. Returns how many bytes of `data` it used when the block is
    /// complete (and sets the body state), `None` when more bytes are needed.
    fn parse_head(&mut self, data: &[u8]) -> Result<Option<usize>, Malformed> {
        let carried = self.partial_head.len();
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
                Ok(httparse::Status::Complete(len)) => Some((len, head_info(&response)?)),
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

/// Chunked body decoder (RFC 9112 section 7.1): sizes, extensions, data, trailers.
#[derive(Debug, Default)]
struct Chunked {
    state: ChunkState,
    size: u64,
    digits: u8,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Extension,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    TrailerLf,
    EndLf,
    Done,
}

impl Chunked {
    fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes bytes up to the end of the body; returns how many it used.
    fn advance(&mut self, data: &[u8]) -> Result<usize, Malformed> {
        use ChunkState::*;
        let mut i = 0;
        while i < data.len() {
            if self.state == Data {
                let take = self.size.min((data.len() - i) as u64);
                self.size -= take;
                i += take as usize;
                if self.size == 0 {
                    self.state = DataCr;
                }
                continue;
            }
            let b = data[i];
            i += 1;
            self.state = match (self.state, b) {
                (Size, b) if b.is_ascii_hexdigit() => {
                    if self.size > u64::MAX >> 4 {
                        return Err(Malformed("chunk size overflows"));
                    }
                    self.size = self.size * 16 + (b as char).to_digit(16).unwrap_or(0) as u64;
                    self.digits += 1;
                    Size
                }
                (Size, b';' | b' ' | b'\t') if self.digits > 0 => Extension,
                (Size, b'\r') if self.digits > 0 => SizeLf,
                (Size, _) => return Err(Malformed("invalid chunk size")),
                (Extension, b'\r') => SizeLf,
                (Extension, _) => Extension,
                (SizeLf, b'\n') => {
                    self.digits = 0;
                    if self.size == 0 {
                        TrailerStart
                    } else {
                        Data
                    }
                }
                (DataCr, b'\r') => DataLf,
                (DataLf, b'\n') => Size,
                (TrailerStart, b'\r') => EndLf,
                (TrailerLine, b'\r') => TrailerLf,
                (TrailerStart | TrailerLine, _) => TrailerLine,
                (TrailerLf, b'\n') => TrailerStart,
                (EndLf, b'\n') => {
                    self.state = Done;
                    return Ok(i);
                }
                (SizeLf | DataCr | DataLf | TrailerLf | EndLf, _) => {
                    return Err(Malformed("missing CRLF in chunked body"))
                }
                (Data | Done, _) => unreachable!("handled above"),
            };
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` cut into the given pieces; returns the responses seen and where.
    fn run(parser: &mut ResponseParser, pieces: &[&[u8]]) -> Result<Vec<Response>, Malformed> {
        let mut out = Vec::new();
        for piece in pieces {
            let mut rest = *piece;
            loop {
                match parser.feed(rest)? {
                    Progress::NeedMore => break,
                    Progress::Complete(r) => {
                        out.push(r);
                        rest = &rest[r.consumed..];
                        if rest.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nX: y\r\n\r\n\
        5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: t\r\n\r\n";

    #[test]
    fn chunked_split_at_every_boundary() {
        // One split point anywhere.
        for cut in 0..=CHUNKED.len() {
            let mut p = ResponseParser::new(false);
            let got = run(&mut p, &[&CHUNKED[..cut], &CHUNKED[cut..]]).unwrap();
            assert_eq!(got.len(), 1, "cut at {cut}");
            assert_eq!(got[0].status, 200);
            assert!(!got[0].close);
        }
        // Every byte on its own.
        let mut p = ResponseParser::new(false);
        let pieces: Vec<&[u8]> = CHUNKED.chunks(1).collect();
        let got = run(&mut p, &pieces).unwrap();
        assert_eq!(got.len(), 1);
        // The last byte completes it, consuming exactly that byte.
        assert_eq!(got[0].consumed, 1);
    }

    #[test]
    fn content_length_split_and_back_to_back() {
        let one = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc";
        let two: Vec<u8> = [&one[..], b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\n\r\n"].concat();
        for cut in 0..=two.len() {
            let mut p = ResponseParser::new(false);
            let got = run(&mut p, &[&two[..cut], &two[cut..]]).unwrap();
            let codes: Vec<u16> = got.iter().map(|r| r.status).collect();
            assert_eq!(codes, [404, 500], "cut at {cut}");
        }
    }

    #[test]
    fn interim_responses_are_skipped() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n\
            HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[input]).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].status, 201);
        assert_eq!(got[0].consumed, input.len());
    }

    #[test]
    fn a_100_continue_is_told_apart_from_other_interim_responses() {
        let mut p = ResponseParser::new(false);
        let hints = p.feed(b"HTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n");
        assert_eq!(hints, Ok(Progress::NeedMore));
        assert!(!p.continued(), "103 is not a go-ahead for the body");
        assert_eq!(p.feed(b"HTTP/1.1 100 Cont"), Ok(Progress::NeedMore));
        assert!(!p.continued());
        assert_eq!(p.feed(b"inue\r\n\r\n"), Ok(Progress::NeedMore));
        assert!(p.continued());
        let done = p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(matches!(done, Ok(Progress::Complete(r)) if r.status == 200));
        assert!(!p.continued(), "reset for the next response");
    }

    #[test]
    fn bodiless_responses() {
        // HEAD: Content-Length describes the body GET would have had.
        let mut p = ResponseParser::new(true);
        let got = run(&mut p, &[b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"]).unwrap();
        assert_eq!(got[0].status, 200);
        for status in ["204 No Content", "304 Not Modified"] {
            let mut p = ResponseParser::new(false);
            let input = format!("HTTP/1.1 {status}\r\nContent-Length: 7\r\n\r\n");
            let got = run(&mut p, &[input.as_bytes()]).unwrap();
            assert_eq!(got.len(), 1, "{status}");
        }
    }

    #[test]
    fn connection_close_and_http10() {
        let cases: &[(&[u8], bool)] = &[
            (
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (
                b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        ];
        for (input, close) in cases {
            let mut p = ResponseParser::new(false);
            let got = run(&mut p, &[input]).unwrap();
            assert_eq!(got[0].close, *close, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn body_until_close() {
        let mut p = ResponseParser::new(false);
        let got = run(&mut p, &[b"HTTP/1.1 200 OK\r\n\r\nsome body", b" more"]).unwrap();
        assert!(got.is_empty());
        let r = p.eof().expect("complete at EOF");
        assert_eq!((r.status, r.close), (200, true));
    }

    #[test]
    fn cut_off_responses_are_not_complete() {
        let mut p = ResponseParser::new(false);
        run(
            &mut p,
            &[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"],
        )
        .unwrap();
        assert!(p.started());
        assert_eq!(p.eof(), None);
        let mut p = ResponseParser::new(false);
        assert!(!p.started());
        assert_eq!(p.eof(), None);
    }

    #[test]
    fn garbage_is_malformed() {
        let bad: &[&[u8]] = &[
            b"garbage garbage\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
        ];
        for input in bad {
            let mut p = ResponseParser::new(false);
            assert!(
                run(&mut p, &[input]).is_err(),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        let mut p = ResponseParser::new(false);
        let huge = vec![b'a'; MAX_HEAD_BYTES + 10];
        let mut input = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        input.extend_from_slice(&huge);
        assert_eq!(
            run(&mut p, &[&input[..100], &input[100..]]),
            Err(Malformed("header block larger than 64 KiB"))
        );
    }
}
