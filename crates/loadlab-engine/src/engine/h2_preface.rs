//! The server's side of the HTTP/2 connection preface, checked before the h2 crate reads it.
//!
//! RFC 9113 (section 3.4) says the server's first frame is SETTINGS. The h2 crate does not
//! check it, and reads an HTTP/1.1 answer as a frame header of four megabytes, so what a user
//! would see is "frame with invalid size" for a server that simply does not speak HTTP/2.
//! [`CheckedPreface`] looks at the first nine bytes the server sends and turns a wrong
//! opening into an I/O error that says what happened (counted as `protocol_error`). It must
//! not change a byte: it only reads along, and after the first frame header it steps aside.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Starts the message of every error this module makes, so that the classifier can tell a
/// wrong preface (explained here) from other I/O errors (h2 keeps only an error's text).
pub(crate) const MARK: &str = "HTTP/2 preface: ";

const FRAME_HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const ACK: u8 = 0x1;

/// An HTTP/2 client connection whose server preface is checked on the way in.
pub(crate) struct CheckedPreface<T> {
    io: T,
    head: [u8; FRAME_HEADER],
    seen: usize,
    /// Over TLS (h2 agreed by ALPN) rather than h2c: changes only the advice.
    tls: bool,
}

impl<T> CheckedPreface<T> {
    pub fn new(io: T, tls: bool) -> Self {
        CheckedPreface {
            io,
            head: [0; FRAME_HEADER],
            seen: 0,
            tls,
        }
    }
}

/// What is wrong with a server's first nine bytes, if anything (`None`: a SETTINGS frame).
pub(crate) fn judge(head: &[u8; FRAME_HEADER], tls: bool) -> Option<String> {
    if head.starts_with(b"HTTP/") {
        let version = String::from_utf8_lossy(&head[..8]).into_owned();
        return Some(if tls {
            format!(
                "the server agreed to h2 by ALPN, then answered with {version}: its bytes are \
                 not valid HTTP/2"
            )
        } else {
            format!(
                "the server does not speak HTTP/2 (h2c): it answered with {version}, so its \
                 bytes are not valid HTTP/2; drop --http2, or use an https:// URL to agree on \
                 h2 by ALPN"
            )
        });
    }
    // Text where a frame header belongs: an HTTP/1.0 server's error page sent without a
    // status line (Python's http.server answers the h2c preface so), or a banner.
    if head
        .iter()
        .all(|b| b.is_ascii_graphic() || b" \r\n\t".contains(b))
    {
        let text = String::from_utf8_lossy(head).escape_debug().to_string();
        return Some(if tls {
            format!(
                "the server agreed to h2 by ALPN, then sent text (\"{text}\"): its bytes are \
                 not valid HTTP/2"
            )
        } else {
            format!(
                "the server does not speak HTTP/2 (h2c): it answered with text (\"{text}\"), so \
                 its bytes are not valid HTTP/2; drop --http2, or use an https:// URL to agree \
                 on h2 by ALPN"
            )
        });
    }
    let (kind, flags) = (head[3], head[4]);
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    if kind == SETTINGS && flags & ACK == 0 && stream == 0 {
        return None;
    }
    let what = match kind {
        0x0 => "DATA".to_string(),
        0x1 => "HEADERS".to_string(),
        0x3 => "RST_STREAM".to_string(),
        0x4 if flags & ACK != 0 => "a SETTINGS acknowledgement".to_string(),
        0x4 => format!("SETTINGS on stream {stream}"),
        0x6 => "PING".to_string(),
        0x7 => "GOAWAY".to_string(),
        0x8 => "WINDOW_UPDATE".to_string(),
        other => format!("a frame of type {other:#x}"),
    };
    Some(format!(
        "the server's first frame was {what}, not SETTINGS: its bytes are not valid HTTP/2 \
         (RFC 9113, 3.4)"
    ))
}

impl<T: AsyncRead + Unpin> AsyncRead for CheckedPreface<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if this.seen >= FRAME_HEADER || !matches!(polled, Poll::Ready(Ok(()))) {
            return polled;
        }
        let new = &buf.filled()[before..];
        let take = new.len().min(FRAME_HEADER - this.seen);
        this.head[this.seen..this.seen + take].copy_from_slice(&new[..take]);
        this.seen += take;
        if this.seen == FRAME_HEADER {
            if let Some(why) = judge(&this.head, this.tls) {
                // A read that fails hands over no bytes.
                buf.set_filled(before);
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{MARK}{why}"),
                )));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CheckedPreface<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8]) -> [u8; FRAME_HEADER] {
        bytes.try_into().unwrap()
    }

    #[test]
    fn only_a_settings_frame_on_stream_0_opens_a_connection() {
        assert_eq!(judge(&head(&[0, 0, 0, 4, 0, 0, 0, 0, 0]), false), None);
        assert_eq!(judge(&head(&[0, 0, 6, 4, 0, 0, 0, 0, 0]), true), None);
        let http1 = judge(&head(b"HTTP/1.1 "), false).unwrap();
        assert!(
            http1.contains("does not speak HTTP/2 (h2c)") && http1.contains("HTTP/1.1"),
            "{http1}"
        );
        let page = judge(&head(b"<!DOCTYPE"), false).unwrap();
        assert!(
            page.contains("(h2c): it answered with text (\"<!DOCTYPE\")"),
            "{page}"
        );
        let ping = judge(&head(&[0, 0, 8, 6, 0, 0, 0, 0, 0]), false).unwrap();
        assert!(ping.contains("was PING, not SETTINGS"), "{ping}");
        let ack = judge(&head(&[0, 0, 0, 4, 1, 0, 0, 0, 0]), false).unwrap();
        assert!(ack.contains("acknowledgement"), "{ack}");
        let on_1 = judge(&head(&[0, 0, 0, 4, 0, 0, 0, 0, 1]), false).unwrap();
        assert!(on_1.contains("on stream 1"), "{on_1}");
    }

    #[tokio::test]
    async fn the_bytes_pass_through_unchanged_whatever_the_reads() {
        use tokio::io::AsyncReadExt;
        let mut frames = vec![0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100];
        frames.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
        // One byte per read: the header arrives in pieces.
        let mut reader = one_byte_per_read(&frames);
        let mut checked = CheckedPreface::new(&mut reader, false);
        let mut got = Vec::new();
        checked.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, frames);

        let mut reader = one_byte_per_read(b"HTTP/1.1 200 OK\r\n\r\n");
        let mut checked = CheckedPreface::new(&mut reader, false);
        let err = checked.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().starts_with(MARK), "{err}");
    }

    /// A reader that hands out one byte per read.
    fn one_byte_per_read(bytes: &[u8]) -> OneByte {
        OneByte(bytes.to_vec(), 0)
    }

    struct OneByte(Vec<u8>, usize);

    impl AsyncRead for OneByte {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if let Some(b) = this.0.get(this.1) {
                buf.put_slice(&[*b]);
                this.1 += 1;
            }
            Poll::Ready(Ok(()))
        }
    }
}
