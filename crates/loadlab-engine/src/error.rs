//! Why a request failed, as data. A failed request is counted by class, never an early
//! return: the run goes on and the report says what went wrong and how often.

use std::io;

/// Failure classes. Small and `Copy`: it is used on the hot path as an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    ConnectRefused,
    ConnectTimeout,
    ConnectError,
    RequestTimeout,
    ConnectionReset,
    ClosedBeforeResponse,
    MalformedResponse,
    OutOfFileDescriptors,
    OutOfEphemeralPorts,
    IoError,
    TlsCertificate,
    TlsHandshake,
    /// HTTP/2: the server reset the stream (RST_STREAM).
    StreamReset,
    /// HTTP/2: the server sent GOAWAY; the request was not processed.
    GoAway,
    /// HTTP/2: a protocol violation (by either side).
    ProtocolError,
    /// HTTP/1.1: the server sent more bytes than the response's framing allows.
    ExtraBytes,
    /// A scenario step with no `status` check got a status of 400 or more.
    Status,
    /// A scenario step's check (or capture) failed on a full response.
    CheckFailed,
    // gRPC: a call that ended with a status other than OK, one class per code (see
    // `grpc::status`), in the codes' order.
    GrpcCancelled,
    GrpcUnknown,
    GrpcInvalidArgument,
    GrpcDeadlineExceeded,
    GrpcNotFound,
    GrpcAlreadyExists,
    GrpcPermissionDenied,
    GrpcResourceExhausted,
    GrpcFailedPrecondition,
    GrpcAborted,
    GrpcOutOfRange,
    GrpcUnimplemented,
    GrpcInternal,
    GrpcUnavailable,
    GrpcDataLoss,
    GrpcUnauthenticated,
    /// WebSocket: the server answered the upgrade with a status other than 101 (over HTTP/2,
    /// the extended CONNECT with one other than 2xx).
    WsRefused,
    /// WebSocket: a 101 answer that is not a valid upgrade (wrong Sec-WebSocket-Accept...).
    WsBadHandshake,
    /// WebSocket: the server closed (a close frame) while a message or pong was owed.
    WsClosed,
    /// WebSocket: a frame or message breaking RFC 6455 (or over the size loadlab accepts).
    WsProtocolError,
}

// Names and explanations live in the result crate's table, indexed by the class.
const _: () = assert!(ErrorClass::ALL.len() == loadlab_result::failure::FAILURE_CLASSES.len());

impl ErrorClass {
    pub const ALL: [ErrorClass; 38] = [
        ErrorClass::ConnectRefused,
        ErrorClass::ConnectTimeout,
        ErrorClass::ConnectError,
        ErrorClass::RequestTimeout,
        ErrorClass::ConnectionReset,
        ErrorClass::ClosedBeforeResponse,
        ErrorClass::MalformedResponse,
        ErrorClass::OutOfFileDescriptors,
        ErrorClass::OutOfEphemeralPorts,
        ErrorClass::IoError,
        ErrorClass::TlsCertificate,
        ErrorClass::TlsHandshake,
        ErrorClass::StreamReset,
        ErrorClass::GoAway,
        ErrorClass::ProtocolError,
        ErrorClass::ExtraBytes,
        ErrorClass::Status,
        ErrorClass::CheckFailed,
        ErrorClass::GrpcCancelled,
        ErrorClass::GrpcUnknown,
        ErrorClass::GrpcInvalidArgument,
        ErrorClass::GrpcDeadlineExceeded,
        ErrorClass::GrpcNotFound,
        ErrorClass::GrpcAlreadyExists,
        ErrorClass::GrpcPermissionDenied,
        ErrorClass::GrpcResourceExhausted,
        ErrorClass::GrpcFailedPrecondition,
        ErrorClass::GrpcAborted,
        ErrorClass::GrpcOutOfRange,
        ErrorClass::GrpcUnimplemented,
        ErrorClass::GrpcInternal,
        ErrorClass::GrpcUnavailable,
        ErrorClass::GrpcDataLoss,
        ErrorClass::GrpcUnauthenticated,
        ErrorClass::WsRefused,
        ErrorClass::WsBadHandshake,
        ErrorClass::WsClosed,
        ErrorClass::WsProtocolError,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The stable name used in JSON results.
    pub fn key(self) -> &'static str {
        loadlab_result::failure::FAILURE_CLASSES[self as usize].0
    }

    /// What a person should read: the problem, and for local limits, the fix.
    pub fn describe(self) -> &'static str {
        loadlab_result::failure::FAILURE_CLASSES[self as usize].1
    }

    /// Whether this class means a connection could not be opened.
    pub fn is_connect_failure(self) -> bool {
        matches!(
            self,
            ErrorClass::ConnectRefused
                | ErrorClass::ConnectTimeout
                | ErrorClass::ConnectError
                | ErrorClass::OutOfFileDescriptors
                | ErrorClass::OutOfEphemeralPorts
                | ErrorClass::TlsCertificate
                | ErrorClass::TlsHandshake
        )
    }

    /// Classifies an error from `connect`.
    pub fn from_connect(err: &io::Error) -> ErrorClass {
        match err.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrorClass::ConnectRefused,
            Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
            Some(libc::ECONNRESET) => ErrorClass::ConnectionReset,
            _ => match Self::local_limit(err) {
                Some(class) => class,
                None if err.kind() == io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
                None => ErrorClass::ConnectError,
            },
        }
    }

    /// Classifies an error from reading or writing an established connection.
    pub fn from_io(err: &io::Error) -> ErrorClass {
        // TLS alerts and protocol errors arrive as I/O errors wrapping a rustls error (with
        // TLS 1.3, a server refusing our client certificate says so on the first read).
        if let Some(tls) = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
        {
            return match tls {
                rustls::Error::InvalidCertificate(_) => ErrorClass::TlsCertificate,
                _ => ErrorClass::TlsHandshake,
            };
        }
        match err.kind() {
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => ErrorClass::ConnectionReset,
            io::ErrorKind::UnexpectedEof => ErrorClass::ClosedBeforeResponse,
            io::ErrorKind::TimedOut => ErrorClass::RequestTimeout,
            _ => Self::local_limit(err).unwrap_or(ErrorClass::IoError),
        }
    }

    /// Classifies an HTTP/2 error.
    pub fn from_h2(err: &h2::Error) -> ErrorClass {
        if let Some(io) = err.get_io() {
            // Bytes that do not decode as frames (h2 reports them as invalid data).
            if io.kind() == io::ErrorKind::InvalidData {
                return ErrorClass::ProtocolError;
            }
            return ErrorClass::from_io(io);
        }
        // A GOAWAY loadlab's side sent, on a protocol violation it detected, is the server's
        // protocol error; only the server's own GOAWAY is `goaway`. Likewise a stream reset:
        // only the server's RST_STREAM is `stream_reset`; one loadlab's HTTP/2 library made
        // (a response HTTP/2 calls malformed, RFC 9113 8.1.1, or a header list past the
        // limit loadlab sets: an HPACK bomb) is that response's fault, a malformed response.
        if err.is_go_away() && err.is_remote() {
            ErrorClass::GoAway
        } else if err.is_reset() && err.is_remote() {
            ErrorClass::StreamReset
        } else if err.is_reset() {
            ErrorClass::MalformedResponse
        } else {
            ErrorClass::ProtocolError
        }
    }

    fn local_limit(err: &io::Error) -> Option<ErrorClass> {
        match err.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => Some(ErrorClass::OutOfFileDescriptors),
            Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => Some(ErrorClass::OutOfEphemeralPorts),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_from_os_errors() {
        let os = io::Error::from_raw_os_error;
        assert_eq!(
            ErrorClass::from_connect(&os(libc::ECONNREFUSED)),
            ErrorClass::ConnectRefused
        );
        assert_eq!(
            ErrorClass::from_connect(&os(libc::EMFILE)),
            ErrorClass::OutOfFileDescriptors
        );
        assert_eq!(
            ErrorClass::from_connect(&os(libc::EADDRNOTAVAIL)),
            ErrorClass::OutOfEphemeralPorts
        );
        assert_eq!(
            ErrorClass::from_io(&os(libc::ECONNRESET)),
            ErrorClass::ConnectionReset
        );
        assert_eq!(
            ErrorClass::from_io(&os(libc::EPIPE)),
            ErrorClass::ConnectionReset
        );
        assert_eq!(
            ErrorClass::from_io(&os(libc::ENFILE)),
            ErrorClass::OutOfFileDescriptors
        );
        // Keys are unique: they are JSON object keys.
        let mut keys: Vec<_> = ErrorClass::ALL.iter().map(|c| c.key()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), ErrorClass::COUNT);
    }
}
