//! A chunked body (RFC 9112 section 7.1), skipped byte by byte as it arrives: sizes,
//! extensions, data, trailers. Nothing is copied.

use super::Malformed;

/// Chunked body decoder (RFC 9112 section 7.1): sizes, extensions, data, trailers.
#[derive(Debug, Default)]
pub(super) struct Chunked {
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
    pub(super) fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes bytes up to the end of the body; returns how many it used.
    pub(super) fn advance(&mut self, data: &[u8]) -> Result<usize, Malformed> {
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
