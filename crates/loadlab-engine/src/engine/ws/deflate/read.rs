//! The server's frames on their way to tungstenite: a data message whose first frame has
//! RSV1 set is inflated (RFC 7692 section 7.2.2: its fragments' payloads, then `00 00 ff
//! ff`, through one raw DEFLATE decoder) and handed over frame by frame, RSV1 clear; every
//! other frame passes as it came, its payload straight into tungstenite's buffer. A message
//! inflates to at most the run's largest message: past it the connection fails, having
//! taken no more memory than that (a decompression bomb is a failure, not an allocation).
//!
//! It must not judge what is not the extension's: a masked frame, RSV2 or RSV3, an opcode
//! out of place pass untouched for tungstenite to fail as it fails them.

use super::frame::{self, Header, CONTINUATION, FIRST_CONTROL, MAX_HEADER};
use super::{broken, InBuf, Tally};
use flate2::{Decompress, FlushDecompress, Status};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Room kept at the start of `out` for the header of the frame being inflated (unmasked:
/// at most 10 bytes), written once its length is known.
const HEAD_ROOM: usize = 10;

/// What a drained buffer keeps of its capacity: more is freed, so that one large message
/// does not stay allocated for the connection's life.
pub(super) const KEEP_BYTES: usize = 64 << 10;

/// The tail a sender strips from each compressed message (RFC 7692 section 7.2.1).
pub(super) const TAIL: [u8; 4] = [0, 0, 0xff, 0xff];

pub(super) struct Inflating {
    /// Bytes for tungstenite: a header passed on, or an inflated frame (from `out_pos`).
    out: Vec<u8>,
    out_pos: usize,
    state: State,
    /// Inside a fragmented data message: whether it is compressed.
    message: Option<bool>,
    /// Made at the first compressed message (most held connections never get one).
    inflater: Option<Decompress>,
    /// This message's bytes inflated so far, and whether its DEFLATE stream ended (a block
    /// with BFINAL set: what follows in the message is not inflated).
    inflated: usize,
    ended: bool,
    /// The run's largest message.
    limit: usize,
    /// server_no_context_takeover: each message starts with an empty window.
    reset_each: bool,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// At a frame's first byte.
    Header,
    /// Passing this many payload bytes as they are.
    Pass(u64),
    /// Inflating a compressed frame's payload, this many bytes still to come.
    Inflate {
        remaining: u64,
        fin: bool,
        opcode: u8,
    },
}

impl Inflating {
    pub(super) fn new(limit: usize, reset_each: bool) -> Inflating {
        Inflating {
            out: Vec::new(),
            out_pos: 0,
            state: State::Header,
            message: None,
            inflater: None,
            inflated: 0,
            ended: false,
            limit,
            reset_each,
        }
    }

    pub(super) fn poll_read<S: AsyncRead + Unpin>(
        &mut self,
        inner: &mut S,
        cx: &mut Context<'_>,
        input: &mut InBuf,
        tally: &Tally,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let building = matches!(self.state, State::Inflate { .. });
            if !building && self.out_pos < self.out.len() {
                let n = buf.remaining().min(self.out.len() - self.out_pos);
                buf.put_slice(&self.out[self.out_pos..self.out_pos + n]);
                self.out_pos += n;
                if self.out_pos == self.out.len() {
                    self.out.clear();
                    self.out_pos = 0;
                    if self.out.capacity() > KEEP_BYTES {
                        self.out = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            match self.state {
                State::Pass(0) => self.state = State::Header,
                State::Pass(remaining) => {
                    let want = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(buf.remaining());
                    let n = if input.data().is_empty() {
                        // Straight from the connection into tungstenite's buffer.
                        let mut part = buf.take(want);
                        ready!(Pin::new(&mut *inner).poll_read(cx, &mut part))?;
                        let n = part.filled().len();
                        // SAFETY: `part` is the unfilled start of `buf`, and `n` of its
                        // bytes were just filled by the read.
                        unsafe { buf.assume_init(n) };
                        buf.advance(n);
                        n
                    } else {
                        let n = want.min(input.data().len());
                        buf.put_slice(&input.data()[..n]);
                        input.consume(n);
                        n
                    };
                    self.state = State::Pass(remaining - n as u64);
                    // 0: the connection's end, which tungstenite reports.
                    return Poll::Ready(Ok(()));
                }
                State::Header => match frame::parse(input.data()) {
                    Some(h) => self.start(h, input, tally)?,
                    None => {
                        if ready!(input.poll_fill(inner, cx, buf.remaining()))? == 0 {
                            return Poll::Ready(Ok(()));
                        }
                    }
                },
                State::Inflate {
                    remaining,
                    fin,
                    opcode,
                } => {
                    if remaining == 0 {
                        self.finish(fin, opcode, tally)?;
                        continue;
                    }
                    if input.data().is_empty()
                        && ready!(input.poll_fill(inner, cx, buf.remaining()))? == 0
                    {
                        return Poll::Ready(Ok(()));
                    }
                    let data = input.data();
                    let n = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(data.len());
                    tally.received_wire(n);
                    self.inflate(&data[..n])?;
                    input.consume(n);
                    self.state = State::Inflate {
                        remaining: remaining - n as u64,
                        fin,
                        opcode,
                    };
                }
            }
        }
    }

    /// A frame's header was read: decides whether the frame passes or is inflated.
    fn start(&mut self, h: Header, input: &mut InBuf, tally: &Tally) -> io::Result<()> {
        let data = h.opcode < FIRST_CONTROL;
        let compressed = !h.rsv23
            && h.mask.is_none()
            && match h.opcode {
                CONTINUATION => self.message == Some(true),
                frame::TEXT | frame::BINARY => h.rsv1 && self.message.is_none(),
                _ => false,
            };
        if h.rsv1 && !h.rsv23 && h.mask.is_none() {
            if h.opcode >= FIRST_CONTROL {
                return Err(broken(format!(
                    "the server set RSV1 on a control frame (opcode {}): RFC 7692 allows it on \
                     a data message's first frame only",
                    h.opcode
                )));
            }
            if h.opcode == CONTINUATION {
                return Err(broken(
                    "the server set RSV1 on a continuation frame: RFC 7692 allows it on a data \
                     message's first frame only"
                        .into(),
                ));
            }
        }
        if data && h.opcode != CONTINUATION {
            self.message = Some(compressed);
        }
        if data && h.fin && self.message.is_some() {
            // The message ends with this frame (`compressed` was read before).
            self.message = None;
        }
        if !compressed {
            self.out.extend_from_slice(&input.data()[..h.size]);
            input.consume(h.size);
            self.state = State::Pass(h.len);
            return Ok(());
        }
        if h.len > self.limit as u64 {
            // tungstenite's bound on a frame, which it never sees of a compressed one.
            return Err(broken(format!(
                "the server announced a compressed frame of {} bytes, over the {} loadlab \
                 accepts",
                h.len, self.limit
            )));
        }
        input.consume(h.size);
        if h.opcode != CONTINUATION {
            self.inflated = 0;
            self.ended = false;
            tally.received_message();
        }
        self.out.clear();
        self.out.resize(HEAD_ROOM, 0);
        self.state = State::Inflate {
            remaining: h.len,
            fin: h.fin,
            opcode: h.opcode,
        };
        Ok(())
    }

    /// A compressed frame's payload is all in: its header goes before what it inflated to.
    fn finish(&mut self, fin: bool, opcode: u8, tally: &Tally) -> io::Result<()> {
        if fin {
            self.inflate(&TAIL)?;
            if self.reset_each || self.ended {
                if let Some(d) = self.inflater.as_mut() {
                    d.reset(false);
                }
            }
        }
        let len = self.out.len() - HEAD_ROOM;
        tally.received_payload(len);
        let mut head = [0u8; MAX_HEADER];
        let size = frame::encode(fin, false, opcode, None, len as u64, &mut head);
        self.out[HEAD_ROOM - size..HEAD_ROOM].copy_from_slice(&head[..size]);
        self.out_pos = HEAD_ROOM - size;
        self.state = State::Header;
        Ok(())
    }

    /// Inflates `input` onto `out`, never holding more than the message's limit (and one
    /// byte, which tells it was passed).
    fn inflate(&mut self, mut input: &[u8]) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        let d = self.inflater.get_or_insert_with(|| Decompress::new(false));
        loop {
            let allowed = self.limit.saturating_sub(self.inflated).saturating_add(1);
            if self.out.capacity() == self.out.len() {
                let grow = input.len().saturating_mul(4).clamp(4096, KEEP_BYTES);
                self.out.reserve_exact(grow.min(allowed));
            }
            let (was_in, was_out) = (d.total_in(), d.total_out());
            let status = d
                .decompress_vec(input, &mut self.out, FlushDecompress::None)
                .map_err(|e| {
                    broken(format!(
                        "a compressed message from the server is not valid DEFLATE data ({e})"
                    ))
                })?;
            let consumed = (d.total_in() - was_in) as usize;
            let produced = (d.total_out() - was_out) as usize;
            input = &input[consumed..];
            self.inflated += produced;
            if self.inflated > self.limit {
                return Err(broken(format!(
                    "a compressed message from the server inflates to more than the {} bytes \
                     loadlab accepts (the largest is twice the message sent, at least 16 MiB); \
                     inflating stopped there",
                    self.limit
                )));
            }
            if status == Status::StreamEnd {
                // A block with BFINAL set: the rest of the message is not DEFLATE data.
                self.ended = true;
                return Ok(());
            }
            let room = self.out.len() < self.out.capacity();
            if input.is_empty() && room {
                return Ok(());
            }
            if consumed == 0 && produced == 0 && room {
                return Err(broken(
                    "a compressed message from the server is not valid DEFLATE data (the \
                     decoder made no progress)"
                        .into(),
                ));
            }
        }
    }

    #[cfg(test)]
    pub(super) fn inflate_for_test(&mut self, input: &[u8]) -> io::Result<()> {
        self.out.resize(HEAD_ROOM, 0);
        self.inflate(input)
    }

    /// What the inflated frame's buffer holds allocated.
    #[cfg(test)]
    pub(super) fn held_bytes(&self) -> usize {
        self.out.capacity()
    }
}
