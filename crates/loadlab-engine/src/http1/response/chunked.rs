//! A chunked body (RFC 9112 section 7.1), skipped byte by byte as it arrives: sizes,
//! extensions, data, trailers. Nothing is copied, and nothing is interpreted beyond framing:
//! an extension's name and value are checked against the grammar, then forgotten.
//!
//! The chunk-size line is read to the letter of RFC 9112 (7.1 and 7.1.1):
//!
//! ```text
//! chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! chunk-size     = 1*HEXDIG
//! chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//! chunk-ext-name = token
//! chunk-ext-val  = token / quoted-string
//! BWS            = OWS = *( SP / HTAB )
//! ```
//!
//! So whitespace is allowed only *inside* an extension: before a `;`, after it, and on either
//! side of `=` (`5 ; a = b` is valid). It is not allowed at the end of the line (`5 `, `5;a `
//! and `5;a=b ` are malformed), a `;` needs a name after it (`5;` is malformed), and an `=`
//! needs a value (`5;a=` is malformed); a name alone (`5;a`) is valid. A size line outside
//! this grammar is a malformed response, counted as one: a server that frames bodies wrongly
//! is what a load test must show, and a lenient reading is how request smuggling starts.

use super::Malformed;

/// Chunked body decoder (RFC 9112 section 7.1): sizes, extensions, data, trailers.
#[derive(Debug, Default)]
pub(super) struct Chunked {
    state: ChunkState,
    size: u64,
    /// Hex digits of the current size read so far (saturating: leading zeros are unbounded).
    digits: u8,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    /// Whitespace after the size: only a `;` may follow (BWS before an extension).
    SizeBws,
    /// After a `;`: optional whitespace, then the extension's name.
    ExtNameStart,
    ExtName,
    /// Whitespace after a name: `=`, `;` may follow, not the line's end.
    ExtNameBws,
    /// After `=`: optional whitespace, then a token or a quoted string.
    ExtValStart,
    ExtToken,
    ExtQuoted,
    /// After a backslash inside a quoted string.
    ExtQuotedPair,
    /// After a value: whitespace, then only a `;` may follow; or the line's end.
    ExtValEnd,
    ExtValBws,
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
                    self.digits = self.digits.saturating_add(1);
                    Size
                }
                (Size, _) if self.digits == 0 => return Err(Malformed("invalid chunk size")),
                (Size | ExtName | ExtValEnd | ExtToken, b'\r') => SizeLf,
                (
                    Size | SizeBws | ExtName | ExtNameBws | ExtToken | ExtValEnd | ExtValBws,
                    b';',
                ) => ExtNameStart,
                (Size | SizeBws, b' ' | b'\t') => SizeBws,
                (Size, _) => return Err(Malformed("invalid chunk size")),
                (SizeBws, b'\r') => {
                    return Err(Malformed("whitespace at the end of a chunk-size line"))
                }
                (SizeBws, _) => return Err(Malformed("invalid chunk size")),
                (ExtNameStart, b' ' | b'\t') => ExtNameStart,
                (ExtNameStart | ExtName, b) if is_tchar(b) => ExtName,
                (ExtNameStart, _) => return Err(Malformed("chunk extension without a name")),
                (ExtName | ExtNameBws, b' ' | b'\t') => ExtNameBws,
                (ExtName | ExtNameBws, b'=') => ExtValStart,
                (ExtValStart, b' ' | b'\t') => ExtValStart,
                (ExtValStart | ExtToken, b) if is_tchar(b) => ExtToken,
                (ExtValStart, b'"') => ExtQuoted,
                (ExtValStart, b'\r') => return Err(Malformed("chunk extension without a value")),
                (ExtQuoted, b'"') => ExtValEnd,
                (ExtQuoted, b'\\') => ExtQuotedPair,
                (ExtQuoted, b) if is_qdtext(b) => ExtQuoted,
                (ExtQuotedPair, b'\t' | b' ' | 0x21..=0x7E | 0x80..=0xFF) => ExtQuoted,
                (ExtToken | ExtValEnd | ExtValBws, b' ' | b'\t') => ExtValBws,
                (ExtNameBws | ExtValBws, b'\r') => {
                    return Err(Malformed("whitespace at the end of a chunk-size line"))
                }
                (
                    ExtName | ExtNameBws | ExtValStart | ExtToken | ExtQuoted | ExtQuotedPair
                    | ExtValEnd | ExtValBws,
                    _,
                ) => return Err(Malformed("invalid character in a chunk extension")),
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

/// RFC 9110 5.6.2: a token's characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 9110 5.6.4: a quoted string's plain characters (HTAB, SP, VCHAR but `"` and `\\`,
/// obs-text).
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5B | 0x5D..=0x7E | 0x80..=0xFF)
}
