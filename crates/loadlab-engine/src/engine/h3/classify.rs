//! HTTP/3 and QUIC failures in loadlab's failure classes, each with what to tell the user:
//! the handshake's (a port nothing answers on, a certificate not trusted, a TLS alert, a
//! refused connection), the connection's (idle timeout, stateless reset, a CONNECTION_CLOSE
//! and its code) and the stream's (a reset and its H3 code). Pure: it records nothing.

use crate::error::ErrorClass;
use std::net::SocketAddr;

/// The TLS alerts about certificates (RFC 8446 6.2): bad_certificate to certificate_unknown,
/// unknown_ca, certificate_required.
const CERTIFICATE_ALERTS: [u8; 7] = [42, 43, 44, 45, 46, 48, 116];

/// QUIC's CRYPTO_ERROR range: 0x100 plus a TLS alert (RFC 9001 4.8).
fn tls_alert(code: quinn::TransportErrorCode) -> Option<u8> {
    let code = u64::from(code);
    (0x100..0x200).contains(&code).then(|| (code - 0x100) as u8)
}

/// Text from the server (a CONNECTION_CLOSE's reason phrase, rustls's words about its
/// certificate), as every peer's text is put in a result (`format::shown`: `escape_debug`
/// when it holds a control character), so a terminal's escape or a line break is shown, not
/// obeyed, in `run` and in `runs show` alike.
fn escaped(text: &str) -> String {
    loadlab_result::format::shown(text).into_owned()
}

/// A server's CONNECTION_CLOSE: its code, and its reason phrase (the server's bytes) escaped.
fn close_text(close: &quinn::ConnectionClose) -> String {
    let code = close.error_code;
    if close.reason.is_empty() {
        return code.to_string();
    }
    format!(
        "{code}: \"{}\"",
        escaped(&String::from_utf8_lossy(&close.reason))
    )
}

/// No reply to the handshake within `--connect-timeout`.
pub(super) fn no_handshake_reply(address: SocketAddr) -> (ErrorClass, String) {
    (
        ErrorClass::ConnectTimeout,
        format!(
            "no QUIC handshake reply from {address} within --connect-timeout: is an HTTP/3 \
             server listening on that UDP port? (a closed UDP port refuses nothing QUIC can see; \
             a firewall may drop UDP)"
        ),
    )
}

/// A handshake that failed.
pub(super) fn handshake(e: &quinn::ConnectionError, address: SocketAddr) -> (ErrorClass, String) {
    use quinn::ConnectionError as E;
    match e {
        E::TimedOut => no_handshake_reply(address),
        // Our side refused the server's handshake: rustls's reason is in the text (a
        // certificate signed by another CA of the same name is a bad signature, alert 51).
        E::TransportError(t) => match tls_alert(t.code) {
            Some(alert)
                if CERTIFICATE_ALERTS.contains(&alert)
                    || t.reason.starts_with("invalid peer certificate") =>
            {
                (
                    ErrorClass::TlsCertificate,
                    format!(
                        "the server's certificate is not trusted ({}): give its CA with --cacert, \
                     or --insecure for a test server",
                        escaped(&t.reason)
                    ),
                )
            }
            Some(_) => (
                ErrorClass::TlsHandshake,
                format!("the QUIC handshake's TLS failed: {}", escaped(&t.reason)),
            ),
            None => (
                ErrorClass::ConnectError,
                format!("the QUIC handshake failed: {}", escaped(&t.to_string())),
            ),
        },
        // The server ended it.
        E::ConnectionClosed(close) => match tls_alert(close.error_code) {
            Some(120) => (
                ErrorClass::TlsHandshake,
                "the server does not offer h3 by ALPN (TLS alert no_application_protocol): it \
                 may not speak HTTP/3 on this port"
                    .into(),
            ),
            Some(alert) if CERTIFICATE_ALERTS.contains(&alert) => (
                ErrorClass::TlsCertificate,
                format!(
                    "the server refused the client certificate (TLS alert {alert}); give one \
                     it trusts with --cert and --key"
                ),
            ),
            Some(alert) => (
                ErrorClass::TlsHandshake,
                format!("the server ended the QUIC handshake with TLS alert {alert}"),
            ),
            None if u64::from(close.error_code) == 0x2 => (
                ErrorClass::ConnectRefused,
                "the server refused the QUIC connection (CONNECTION_REFUSED)".into(),
            ),
            None => (
                ErrorClass::ConnectError,
                format!(
                    "the server closed the QUIC handshake: {}",
                    close_text(close)
                ),
            ),
        },
        E::VersionMismatch => (
            ErrorClass::ConnectError,
            "the server speaks no QUIC version loadlab offers (version 1)".into(),
        ),
        E::Reset => (
            ErrorClass::ConnectionReset,
            "the server answered the QUIC handshake with a stateless reset".into(),
        ),
        other => (
            ErrorClass::ConnectError,
            format!("the QUIC handshake failed: {}", escaped(&other.to_string())),
        ),
    }
}

/// A QUIC connection lost after its handshake (seen through h3-quinn).
fn quic_lost(e: &quinn::ConnectionError) -> (ErrorClass, String) {
    use quinn::ConnectionError as E;
    match e {
        E::TimedOut => idle_timeout(),
        E::Reset => (
            ErrorClass::ConnectionReset,
            "the server sent a QUIC stateless reset (it lost the connection's state: restarted?)"
                .into(),
        ),
        E::ConnectionClosed(close) => (
            ErrorClass::ConnectionReset,
            format!(
                "the server closed the QUIC connection: {}",
                close_text(close)
            ),
        ),
        E::ApplicationClosed(close) => (
            ErrorClass::GoAway,
            format!(
                "the server closed the connection with {}",
                ::h3::error::Code::from(u64::from(close.error_code))
            ),
        ),
        E::TransportError(t) => (
            ErrorClass::ProtocolError,
            format!(
                "the server broke QUIC; loadlab closed the connection: {}",
                escaped(&t.to_string())
            ),
        ),
        E::LocallyClosed => (
            ErrorClass::ClosedBeforeResponse,
            "the connection was closed by loadlab".into(),
        ),
        other => (
            ErrorClass::IoError,
            format!("QUIC: {}", escaped(&other.to_string())),
        ),
    }
}

fn idle_timeout() -> (ErrorClass, String) {
    (
        ErrorClass::RequestTimeout,
        "the QUIC connection idled out: no packet from the server within its idle timeout".into(),
    )
}

/// An HTTP/3 connection's failure.
pub(super) fn connection(e: &::h3::error::ConnectionError) -> (ErrorClass, String) {
    use ::h3::error::ConnectionError as C;
    use ::h3::quic::ConnectionErrorIncoming as I;
    match e {
        C::Remote {
            0: I::ApplicationClose { error_code },
            ..
        } => (
            ErrorClass::GoAway,
            format!(
                "the server closed the connection with {}",
                ::h3::error::Code::from(*error_code)
            ),
        ),
        C::Remote { 0: I::Timeout, .. } | C::Timeout { .. } => idle_timeout(),
        C::Remote {
            0: I::Undefined(inner),
            ..
        } => match inner.downcast_ref::<quinn::ConnectionError>() {
            Some(q) => quic_lost(q),
            None => (
                ErrorClass::IoError,
                format!("QUIC: {}", escaped(&inner.to_string())),
            ),
        },
        C::Remote {
            0: I::InternalError(why),
            ..
        } => (ErrorClass::IoError, format!("QUIC: {why}")),
        C::Local { error, .. } => (
            ErrorClass::ProtocolError,
            format!("loadlab closed the connection: {error:?}"),
        ),
        other => (ErrorClass::IoError, format!("HTTP/3: {other:?}")),
    }
}

/// How a request's stream failed.
pub(super) enum StreamFailure {
    /// The server did not process the request (H3_REQUEST_REJECTED, or a GOAWAY seen before
    /// it was sent): it may be sent again. `true`: only the stream was refused.
    NotProcessed { stream_only: bool },
    /// Failed with the connection.
    Connection(ErrorClass, String),
    /// Failed alone: the connection goes on.
    Stream(ErrorClass, String),
}

/// An HTTP/3 stream's failure.
pub(super) fn stream(e: &::h3::error::StreamError) -> StreamFailure {
    use ::h3::error::{Code, StreamError as S};
    match e {
        S::RemoteTerminate { code, .. } if *code == Code::H3_REQUEST_REJECTED => {
            StreamFailure::NotProcessed { stream_only: true }
        }
        S::RemoteClosing { .. } => StreamFailure::NotProcessed { stream_only: false },
        S::RemoteTerminate { code, .. } => StreamFailure::Stream(
            ErrorClass::StreamReset,
            format!("the server reset the stream with {code}"),
        ),
        S::ConnectionError { 0: c, .. } => {
            let (class, why) = connection(c);
            StreamFailure::Connection(class, why)
        }
        S::StreamError { code, reason, .. } => StreamFailure::Stream(
            if *code == Code::H3_MESSAGE_ERROR {
                ErrorClass::MalformedResponse
            } else {
                ErrorClass::ProtocolError
            },
            format!("the server's response broke HTTP/3 ({code}: {reason})"),
        ),
        S::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => StreamFailure::Stream(
            ErrorClass::ProtocolError,
            format!(
                "the request's headers ({actual_size} bytes) exceed the server's limit \
                 ({max_size} bytes)"
            ),
        ),
        other => StreamFailure::Stream(ErrorClass::IoError, format!("HTTP/3: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::{ConnectionClose, ConnectionError as E, TransportErrorCode};

    fn closed(code: TransportErrorCode) -> E {
        E::ConnectionClosed(ConnectionClose {
            error_code: code,
            frame_type: None,
            reason: bytes::Bytes::new(),
        })
    }

    #[test]
    fn handshake_failures_in_the_connect_classes() {
        let at: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let class = |e: &E| handshake(e, at).0;
        assert_eq!(class(&E::TimedOut), ErrorClass::ConnectTimeout);
        assert!(handshake(&E::TimedOut, at).1.contains("UDP port"));
        assert_eq!(class(&E::VersionMismatch), ErrorClass::ConnectError);
        assert_eq!(class(&E::Reset), ErrorClass::ConnectionReset);
        // The server's TLS alerts: no h3 by ALPN, a client certificate refused, others.
        let (alpn, why) = handshake(&closed(TransportErrorCode::crypto(120)), at);
        assert_eq!(alpn, ErrorClass::TlsHandshake);
        assert!(why.contains("h3 by ALPN"), "{why}");
        assert_eq!(
            class(&closed(TransportErrorCode::crypto(116))),
            ErrorClass::TlsCertificate
        );
        assert_eq!(
            class(&closed(TransportErrorCode::crypto(40))),
            ErrorClass::TlsHandshake
        );
        assert_eq!(
            class(&closed(TransportErrorCode::CONNECTION_REFUSED)),
            ErrorClass::ConnectRefused
        );
        assert!(ErrorClass::ConnectRefused.is_connect_failure());
    }

    /// Issue 51, item 5: a CONNECTION_CLOSE's reason phrase is the server's bytes; in the
    /// detail a terminal is shown, they are escaped (it cleared the screen, set the title,
    /// rang the bell and forged a line "FAKE: all requests succeeded").
    #[test]
    fn a_close_reason_is_escaped_where_it_enters_the_result() {
        let at: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let hostile = "\u{1b}[2J\u{1b}]0;title\u{7}\r\nFAKE: all requests succeeded";
        let close = E::ConnectionClosed(ConnectionClose {
            error_code: TransportErrorCode::PROTOCOL_VIOLATION,
            frame_type: None,
            reason: bytes::Bytes::from(hostile),
        });
        let app = E::ApplicationClosed(quinn::ApplicationClose {
            error_code: quinn::VarInt::from_u32(0x100),
            reason: bytes::Bytes::from(hostile),
        });
        for why in [
            handshake(&close, at).1,
            quic_lost(&close).1,
            handshake(&app, at).1,
        ] {
            assert!(why.contains("FAKE: all requests succeeded"), "{why}");
            assert!(
                !why.chars().any(|c| c.is_control()),
                "a control character reached the detail: {why:?}"
            );
            assert!(
                why.contains("\\u{1b}[2J") && why.contains("\\r\\nFAKE"),
                "{why}"
            );
        }
    }

    #[test]
    fn a_lost_connection_by_how_it_was_lost() {
        assert_eq!(quic_lost(&E::TimedOut).0, ErrorClass::RequestTimeout);
        assert!(quic_lost(&E::TimedOut).1.contains("idled out"));
        assert_eq!(quic_lost(&E::Reset).0, ErrorClass::ConnectionReset);
        assert!(quic_lost(&E::Reset).1.contains("stateless reset"));
        assert_eq!(
            quic_lost(&closed(TransportErrorCode::crypto(40))).0,
            ErrorClass::ConnectionReset
        );
    }
}
