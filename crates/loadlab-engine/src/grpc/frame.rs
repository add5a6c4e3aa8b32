//! gRPC's message framing over HTTP/2 DATA (gRPC's `PROTOCOL-HTTP2.md`, Length-Prefixed-
//! Message): one byte saying whether the message is compressed, four bytes of its length
//! (big-endian), the message. Five bytes by hand instead of a codec stack: a request is
//! framed once for the whole run, and a response is only walked, never kept.
//!
//! [`Decoder`] reads a response as its DATA arrives, in any pieces, holding no message: it
//! counts messages and checks their framing against a bound (`max_message_bytes`), so a
//! hostile server's four-gigabyte length prefix or endless stream costs nothing but time
//! (which `--timeout` bounds).

use bytes::{BufMut, Bytes, BytesMut};
use std::io::Write as _;

/// The length prefix's size.
pub const PREFIX_BYTES: usize = 5;

/// `message` framed as one Length-Prefixed-Message; gzip-compressed (and flagged so) with
/// `gzip`. The request's `grpc-encoding: gzip` is the caller's.
pub fn encode(message: &[u8], gzip: bool) -> Bytes {
    let compressed;
    let payload = if gzip {
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        // Writing to a Vec cannot fail.
        let _ = z.write_all(message);
        compressed = z.finish().unwrap_or_default();
        &compressed[..]
    } else {
        message
    };
    let mut out = BytesMut::with_capacity(PREFIX_BYTES + payload.len());
    out.put_u8(u8::from(gzip));
    out.put_u32(payload.len() as u32);
    out.put_slice(payload);
    out.freeze()
}

/// What is wrong with a response's messages. Each is the server's fault, and says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A message larger than the bound; the client stops counting its bytes.
    TooLarge { length: u32, max: u32 },
    /// The compressed flag on a message of a response that announced no `grpc-encoding`.
    CompressedUnannounced,
    /// A flag byte other than 0 or 1.
    BadFlag(u8),
    /// The stream ended inside a message (its prefix promised more than came).
    Truncated { missing: u64 },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { length, max } => write!(
                f,
                "the server sent a message of {length} bytes, more than the {max} loadlab \
                 accepts (--grpc-max-message)"
            ),
            FrameError::CompressedUnannounced => f.write_str(
                "the server sent a compressed message without announcing its grpc-encoding",
            ),
            FrameError::BadFlag(b) => write!(
                f,
                "a message's compressed flag is {b}, not 0 or 1: the response is not gRPC's \
                 framing"
            ),
            FrameError::Truncated { missing } => write!(
                f,
                "the response ended {missing} bytes short of the message its length prefix \
                 announced"
            ),
        }
    }
}

/// Walks a response's messages as their bytes arrive.
#[derive(Debug)]
pub struct Decoder {
    max_message_bytes: u32,
    /// The response announced a `grpc-encoding` (other than identity): compressed messages
    /// are allowed.
    compression_announced: bool,
    /// The prefix read so far, while inside one.
    prefix: [u8; PREFIX_BYTES],
    prefix_len: usize,
    /// Bytes of the current message still to come (0: between messages).
    remaining: u64,
    /// Whole messages seen.
    pub messages: u64,
    /// The first framing error; once set, nothing more is read.
    pub error: Option<FrameError>,
}

impl Decoder {
    pub fn new(max_message_bytes: u32) -> Decoder {
        Decoder {
            max_message_bytes,
            compression_announced: false,
            prefix: [0; PREFIX_BYTES],
            prefix_len: 0,
            remaining: 0,
            messages: 0,
            error: None,
        }
    }

    /// The response's headers named an encoding: its messages may be compressed.
    pub fn allow_compressed(&mut self) {
        self.compression_announced = true;
    }

    /// Reads the next piece of the response's DATA.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() && self.error.is_none() {
            if self.remaining > 0 {
                let take = (self.remaining.min(chunk.len() as u64)) as usize;
                self.remaining -= take as u64;
                chunk = &chunk[take..];
                if self.remaining == 0 {
                    self.messages += 1;
                }
                continue;
            }
            let take = (PREFIX_BYTES - self.prefix_len).min(chunk.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&chunk[..take]);
            self.prefix_len += take;
            chunk = &chunk[take..];
            if self.prefix_len == PREFIX_BYTES {
                self.prefix_len = 0;
                self.start_message();
            }
        }
    }

    fn start_message(&mut self) {
        let [flag, a, b, c, d] = self.prefix;
        let length = u32::from_be_bytes([a, b, c, d]);
        self.error = match flag {
            0 => None,
            1 if self.compression_announced => None,
            1 => Some(FrameError::CompressedUnannounced),
            other => Some(FrameError::BadFlag(other)),
        };
        if self.error.is_none() && length > self.max_message_bytes {
            self.error = Some(FrameError::TooLarge {
                length,
                max: self.max_message_bytes,
            });
        }
        if length == 0 {
            self.messages += 1;
        }
        self.remaining = u64::from(length);
    }

    /// The response is over: a message cut short is an error.
    pub fn finish(&mut self) {
        if self.error.is_none() && (self.remaining > 0 || self.prefix_len > 0) {
            let missing = if self.prefix_len > 0 {
                (PREFIX_BYTES - self.prefix_len) as u64
            } else {
                self.remaining
            };
            self.error = Some(FrameError::Truncated { missing });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(pieces: &[&[u8]], max: u32, announced: bool) -> Decoder {
        let mut d = Decoder::new(max);
        if announced {
            d.allow_compressed();
        }
        for p in pieces {
            d.feed(p);
        }
        d.finish();
        d
    }

    #[test]
    fn framing_round_trips_in_any_pieces() {
        let two: Vec<u8> = [encode(b"hello", false), encode(b"", false)].concat();
        assert_eq!(&two[..5], &[0, 0, 0, 0, 5]);
        for cut in 0..=two.len() {
            let d = walk(&[&two[..cut], &two[cut..]], 100, false);
            assert_eq!((d.messages, d.error.clone()), (2, None), "cut at {cut}");
        }
        let bytewise: Vec<&[u8]> = two.chunks(1).collect();
        assert_eq!(walk(&bytewise, 100, false).messages, 2);
    }

    #[test]
    fn gzip_is_flagged_and_decodes() {
        let framed = encode(b"aaaaaaaaaaaaaaaaaaaaaaaa", true);
        assert_eq!(framed[0], 1);
        let len = u32::from_be_bytes([framed[1], framed[2], framed[3], framed[4]]) as usize;
        let mut out = Vec::new();
        use std::io::Read as _;
        flate2::read::GzDecoder::new(&framed[5..5 + len])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"aaaaaaaaaaaaaaaaaaaaaaaa");
    }

    #[test]
    fn hostile_framing_is_named() {
        // A 4 GiB prefix: refused at once, nothing held.
        let huge = [0u8, 0xff, 0xff, 0xff, 0xff, 1, 2, 3];
        assert_eq!(
            walk(&[&huge], 4 << 20, false).error,
            Some(FrameError::TooLarge {
                length: u32::MAX,
                max: 4 << 20
            })
        );
        // A prefix promising more than the stream carries.
        assert_eq!(
            walk(&[&[0, 0, 0, 0, 10, 1, 2]], 100, false).error,
            Some(FrameError::Truncated { missing: 8 })
        );
        assert_eq!(
            walk(&[&[0, 0]], 100, false).error,
            Some(FrameError::Truncated { missing: 3 })
        );
        let compressed = encode(b"x", true);
        assert_eq!(
            walk(&[&compressed], 100, false).error,
            Some(FrameError::CompressedUnannounced)
        );
        assert_eq!(walk(&[&compressed], 100, true).error, None);
        assert_eq!(
            walk(&[&[7, 0, 0, 0, 0]], 100, false).error,
            Some(FrameError::BadFlag(7))
        );
    }
}
