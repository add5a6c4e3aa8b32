//! Failure classes as results name and explain them. The engine's `ErrorClass` indexes this
//! table in the same order, so a class's name and explanation have one home, readable by
//! anything that reads results (reports, the store) without the engine.

/// Every failure class: its stable name in results, and what a person should read (the
/// problem and, for local limits, the fix).
pub const FAILURE_CLASSES: &[(&str, &str)] = &[
    ("connect_refused", "connection refused (nothing listening, or the listen backlog overflowed)"),
    ("connect_timeout", "connect timed out (see --connect-timeout)"),
    ("connect_error", "could not connect (other error)"),
    ("request_timeout", "no full response within --timeout"),
    ("connection_reset", "connection reset by the server"),
    ("closed_before_response", "server closed the connection before a full response"),
    ("malformed_response", "malformed HTTP response"),
    ("out_of_file_descriptors", "loadlab ran out of file descriptors: raise `ulimit -n` (hard limit) or use fewer -c connections"),
    ("out_of_ephemeral_ports", "loadlab ran out of local ports: use keep-alive, widen net.ipv4.ip_local_port_range, or set net.ipv4.tcp_tw_reuse=1"),
    ("io_error", "other I/O error"),
    ("tls_certificate", "the server's certificate was rejected (see the detail; --cacert or --insecure)"),
    ("tls_handshake", "the TLS handshake failed"),
    ("stream_reset", "the server reset the HTTP/2 stream (RST_STREAM)"),
    ("goaway", "the server sent GOAWAY: the request was not processed"),
    ("protocol_error", "HTTP/2 protocol error"),
    (
        "extra_bytes",
        "the server sent more bytes than the response's Content-Length or chunks announced \
         (its framing is wrong; the connection is not reused)",
    ),
    (
        "status",
        "a scenario step with no status check was answered 400 or above (add a status check \
         to the step if that answer is expected)",
    ),
    (
        "check_failed",
        "a scenario step's check or capture failed on a full response (see the step's checks)",
    ),
    ("grpc_cancelled", "gRPC CANCELLED: the call was cancelled (usually by the caller; from a server, often a proxy's)"),
    ("grpc_unknown", "gRPC UNKNOWN: an unknown error (a server's exception, or an HTTP status that is not a gRPC answer)"),
    ("grpc_invalid_argument", "gRPC INVALID_ARGUMENT: the server refused the request message (check --data against the method)"),
    ("grpc_deadline_exceeded", "gRPC DEADLINE_EXCEEDED: the server's deadline passed (--deadline, sent as grpc-timeout; loadlab's own --timeout is request_timeout)"),
    ("grpc_not_found", "gRPC NOT_FOUND: the server found no such entity"),
    ("grpc_already_exists", "gRPC ALREADY_EXISTS: the entity the call creates already exists"),
    ("grpc_permission_denied", "gRPC PERMISSION_DENIED: the caller may not do this (check the metadata given with -H)"),
    ("grpc_resource_exhausted", "gRPC RESOURCE_EXHAUSTED: the server ran out of a resource, or a quota or rate limit said no"),
    ("grpc_failed_precondition", "gRPC FAILED_PRECONDITION: the system is not in the state the call needs"),
    ("grpc_aborted", "gRPC ABORTED: the call was aborted (a concurrency conflict)"),
    ("grpc_out_of_range", "gRPC OUT_OF_RANGE: the call asked past a valid range"),
    ("grpc_unimplemented", "gRPC UNIMPLEMENTED: the server does not implement this method (check --grpc)"),
    ("grpc_internal", "gRPC INTERNAL: the server (or its gRPC library) hit an internal error"),
    ("grpc_unavailable", "gRPC UNAVAILABLE: the service is unavailable (overloaded, restarting, or a proxy found no backend)"),
    ("grpc_data_loss", "gRPC DATA_LOSS: unrecoverable data loss or corruption"),
    ("grpc_unauthenticated", "gRPC UNAUTHENTICATED: the call carried no valid credentials (check the metadata given with -H)"),
    ("ws_refused", "WebSocket: the server answered the upgrade with a status other than 101 (over HTTP/2, the CONNECT with one other than 2xx; counted among the status codes; the first in the detail)"),
    ("ws_bad_handshake", "WebSocket: the server's 101 answer is not a valid upgrade (wrong Sec-WebSocket-Accept, missing Upgrade header: see the detail)"),
    ("ws_closed", "WebSocket: the server closed the connection (a close frame) while a message's echo or a pong was owed (its code and reason in the detail)"),
    ("ws_protocol_error", "WebSocket: the server broke RFC 6455 (a bad frame, text that is not UTF-8, an invalid close code, close code 1002 or 1007, or a message over the size loadlab accepts)"),
];

/// The explanation of a failure class by its name, e.g. `connect_refused`.
pub fn describe_failure(key: &str) -> Option<&'static str> {
    FAILURE_CLASSES
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, what)| *what)
}

/// Adds counts by name (failure classes, status codes) into `into`.
pub fn add_counts(
    into: &mut std::collections::BTreeMap<String, u64>,
    from: &std::collections::BTreeMap<String, u64>,
) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}
