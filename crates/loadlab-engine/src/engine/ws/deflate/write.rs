//! loadlab's frames on their way to the server: tungstenite writes each message as masked
//! frames; here each data frame is unmasked, deflated (raw DEFLATE, a sync flush at its end,
//! the `00 00 ff ff` tail stripped from a message's last: RFC 7692 section 7.2.1), and
//! written with RSV1 set on the message's first frame and masked again. Control frames pass
//! as they are. The buffers are kept from message to message (up to a bound), so a steady
//! echo load allocates nothing per message.
//!
//! The mask key is the one tungstenite drew for the frame: the frame it masked never
//! reaches the wire, so its fresh, unpredictable key still masks exactly one frame there,
//! as RFC 6455 section 5.3 requires.

use super::frame::{self, Header, CONTINUATION, FIRST_CONTROL, MAX_HEADER};
use super::read::{KEEP_BYTES, TAIL};
use super::Tally;
use flate2::{Compress, Compression, FlushCompress};
use std::io;

pub(super) struct Deflating {
    /// A header being read from tungstenite's writes.
    head: [u8; MAX_HEADER],
    head_len: usize,
    state: State,
    /// The frame being deflated: its payload unmasked, then what it deflated to.
    payload: Vec<u8>,
    deflated: Vec<u8>,
    /// Bytes for the connection, from `pending_pos`.
    pub(super) pending: Vec<u8>,
    pub(super) pending_pos: usize,
    /// Made at the first message sent (held connections send none).
    compressor: Option<Compress>,
    /// Inside a fragmented message being deflated.
    in_message: bool,
    /// client_no_context_takeover: each message starts with an empty window.
    reset_each: bool,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Header,
    Pass(u64),
    Collect {
        remaining: u64,
        mask: Option<[u8; 4]>,
        fin: bool,
        opcode: u8,
    },
}

impl Deflating {
    pub(super) fn new(reset_each: bool) -> Deflating {
        Deflating {
            head: [0; MAX_HEADER],
            head_len: 0,
            state: State::Header,
            payload: Vec::new(),
            deflated: Vec::new(),
            pending: Vec::new(),
            pending_pos: 0,
            compressor: None,
            in_message: false,
            reset_each,
        }
    }

    /// Takes all of `buf`, tungstenite's frames in any pieces, onto `pending`.
    pub(super) fn accept(&mut self, mut buf: &[u8], tally: &Tally) -> io::Result<()> {
        while !buf.is_empty() {
            match self.state {
                State::Header => {
                    let take = (MAX_HEADER - self.head_len).min(buf.len());
                    self.head[self.head_len..self.head_len + take].copy_from_slice(&buf[..take]);
                    match frame::parse(&self.head[..self.head_len + take]) {
                        None => {
                            self.head_len += take;
                            buf = &buf[take..];
                        }
                        Some(h) => {
                            buf = &buf[h.size - self.head_len..];
                            self.head_len = 0;
                            self.start(h, tally)?;
                        }
                    }
                }
                State::Pass(remaining) => {
                    let n = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(buf.len());
                    self.pending.extend_from_slice(&buf[..n]);
                    buf = &buf[n..];
                    self.state = match remaining - n as u64 {
                        0 => State::Header,
                        left => State::Pass(left),
                    };
                }
                State::Collect {
                    remaining,
                    mask,
                    fin,
                    opcode,
                } => {
                    let n = usize::try_from(remaining)
                        .unwrap_or(usize::MAX)
                        .min(buf.len());
                    let at = self.payload.len();
                    self.payload.extend_from_slice(&buf[..n]);
                    if let Some(key) = mask {
                        frame::apply_mask(&mut self.payload[at..], key, at);
                    }
                    buf = &buf[n..];
                    let left = remaining - n as u64;
                    self.state = State::Collect {
                        remaining: left,
                        mask,
                        fin,
                        opcode,
                    };
                    if left == 0 {
                        self.deflate_frame(fin, opcode, mask, tally)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, h: Header, tally: &Tally) -> io::Result<()> {
        let deflates = !h.rsv1
            && !h.rsv23
            && match h.opcode {
                CONTINUATION => self.in_message,
                frame::TEXT | frame::BINARY => !self.in_message,
                _ => false,
            };
        if !deflates {
            debug_assert!(h.opcode >= FIRST_CONTROL, "tungstenite wrote {h:?}");
            self.pending.extend_from_slice(&self.head[..h.size]);
            self.state = if h.len == 0 {
                State::Header
            } else {
                State::Pass(h.len)
            };
            return Ok(());
        }
        self.payload.clear();
        self.state = State::Collect {
            remaining: h.len,
            mask: h.mask,
            fin: h.fin,
            opcode: h.opcode,
        };
        if h.len == 0 {
            self.deflate_frame(h.fin, h.opcode, h.mask, tally)?;
        }
        Ok(())
    }

    /// The frame's payload is all in: deflated, framed and masked onto `pending`.
    fn deflate_frame(
        &mut self,
        fin: bool,
        opcode: u8,
        mask: Option<[u8; 4]>,
        tally: &Tally,
    ) -> io::Result<()> {
        let first = !self.in_message;
        let c = self
            .compressor
            .get_or_insert_with(|| Compress::new(Compression::default(), false));
        self.deflated.clear();
        // Room for the worst case (stored blocks: 5 bytes per 16 KiB and the flush's), so
        // that one sync flush finishes; a second would add another empty block.
        self.deflated
            .reserve(self.payload.len() + self.payload.len() / 1024 * 5 / 16 + 64);
        let mut input = &self.payload[..];
        loop {
            let was_in = c.total_in();
            c.compress_vec(input, &mut self.deflated, FlushCompress::Sync)
                .map_err(|e| io::Error::other(format!("deflating a message: {e}")))?;
            input = &input[(c.total_in() - was_in) as usize..];
            if input.is_empty() && self.deflated.len() < self.deflated.capacity() {
                break;
            }
            self.deflated.reserve(input.len() + 64);
        }
        if fin {
            if self.deflated.ends_with(&TAIL) {
                self.deflated.truncate(self.deflated.len() - TAIL.len());
            }
            if self.reset_each {
                c.reset();
            }
        }
        self.in_message = !fin;
        tally.sent(self.payload.len(), self.deflated.len(), first);
        let mut head = [0u8; MAX_HEADER];
        let size = frame::encode(
            fin,
            first,
            opcode,
            mask,
            self.deflated.len() as u64,
            &mut head,
        );
        if let Some(key) = mask {
            frame::apply_mask(&mut self.deflated, key, 0);
        }
        self.pending.extend_from_slice(&head[..size]);
        self.pending.extend_from_slice(&self.deflated);
        self.state = State::Header;
        for b in [&mut self.payload, &mut self.deflated] {
            b.clear();
            if b.capacity() > KEEP_BYTES {
                *b = Vec::new();
            }
        }
        Ok(())
    }
}
