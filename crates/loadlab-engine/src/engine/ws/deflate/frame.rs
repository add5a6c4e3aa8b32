//! RFC 6455 frame headers, as far as permessage-deflate needs them: read one (the bits, the
//! opcode, the mask key, the payload's length) and write one. Validation beyond that is
//! tungstenite's: a frame this layer does not change reaches it byte for byte.

/// The largest header: 2 bytes, 8 of length, 4 of mask key.
pub(super) const MAX_HEADER: usize = 14;

/// The first byte's bits.
const FIN: u8 = 0x80;
const RSV1: u8 = 0x40;
const RSV23: u8 = 0x30;

/// Opcodes: continuation, and the first control one (close, ping, pong and reserved ones
/// are at or above it).
pub(super) const CONTINUATION: u8 = 0;
pub(super) const TEXT: u8 = 1;
pub(super) const BINARY: u8 = 2;
pub(super) const FIRST_CONTROL: u8 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    pub fin: bool,
    pub rsv1: bool,
    /// RSV2 or RSV3: no extension loadlab speaks sets them (tungstenite fails such a frame).
    pub rsv23: bool,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    pub len: u64,
    /// The header's own bytes.
    pub size: usize,
}

/// The header at the start of `b`, or `None` while more bytes are needed.
pub(super) fn parse(b: &[u8]) -> Option<Header> {
    let (&first, &second) = (b.first()?, b.get(1)?);
    let masked = second & 0x80 != 0;
    let (len, mut size) = match second & 0x7f {
        126 => (
            u64::from(u16::from_be_bytes(b.get(2..4)?.try_into().ok()?)),
            4,
        ),
        127 => (u64::from_be_bytes(b.get(2..10)?.try_into().ok()?), 10),
        n => (u64::from(n), 2),
    };
    let mask = if masked {
        let key: [u8; 4] = b.get(size..size + 4)?.try_into().ok()?;
        size += 4;
        Some(key)
    } else {
        None
    };
    Some(Header {
        fin: first & FIN != 0,
        rsv1: first & RSV1 != 0,
        rsv23: first & RSV23 != 0,
        opcode: first & 0x0f,
        mask,
        len,
        size,
    })
}

/// Writes a header (RSV2 and RSV3 clear) into `out`; returns its size.
pub(super) fn encode(
    fin: bool,
    rsv1: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    len: u64,
    out: &mut [u8; MAX_HEADER],
) -> usize {
    out[0] = if fin { FIN } else { 0 } | if rsv1 { RSV1 } else { 0 } | (opcode & 0x0f);
    let masked = if mask.is_some() { 0x80 } else { 0 };
    let mut size = match len {
        0..=125 => {
            out[1] = masked | len as u8;
            2
        }
        126..=0xffff => {
            out[1] = masked | 126;
            out[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            4
        }
        _ => {
            out[1] = masked | 127;
            out[2..10].copy_from_slice(&len.to_be_bytes());
            10
        }
    };
    if let Some(key) = mask {
        out[size..size + 4].copy_from_slice(&key);
        size += 4;
    }
    size
}

/// XORs `data` with `key`, `data` starting `offset` bytes into its frame's payload (masking
/// and unmasking are the same).
pub(super) fn apply_mask(data: &mut [u8], key: [u8; 4], offset: usize) {
    for (i, b) in data.iter_mut().enumerate() {
        *b ^= key[(offset + i) % 4];
    }
}
