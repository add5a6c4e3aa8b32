//! The gRPC checks (capability `grpc`, targets/CONTRACT.md): the contract's service,
//! `loadlab.lab.v1.Workload` (`targets/common/proto/workload.proto`, compiled here at run
//! time as `--proto` is), on the target's own port: h2c over plain TCP, ALPN `h2` over TLS.
//!
//! The calls are loadlab's own gRPC client's, the engine's (`loadlab run --grpc`, a few
//! dozen calls on one connection): every `Compute` OK with its one answer, every `Echo`
//! message answered on its stream (ping-pong: each sent after the answer to the one before),
//! an `n` over the maximum `INVALID_ARGUMENT`. The engine counts answers and never keeps
//! them, so one `Compute` answer is read whole by a single HTTP/2 call (hyper's, with the
//! engine's framed request) and compared byte for byte with `/compute`'s JSON. A target
//! whose manifest does not declare the capability gets the checks as a visible skip.

use super::cases::{compute_json, Runner};
use super::Outcome;
use bytes::Bytes;
use loadlab_engine::grpc::{Call, Data, GrpcSpec, DEFAULT_MAX_MESSAGE_BYTES};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

const PROTO: &str = include_str!("../../../../targets/common/proto/workload.proto");
const COMPUTE: &str = "loadlab.lab.v1.Workload/Compute";
const ECHO: &str = "loadlab.lab.v1.Workload/Echo";
/// `/compute`'s maximum `n`: one more is `INVALID_ARGUMENT`.
const MAX_COMPUTE_N: u32 = 100_000;
const CALLS: u64 = 40;
const ECHO_CALLS: u64 = 10;
const ECHO_MESSAGES: u64 = 5;

/// The labels of the checks, as the report shows them.
const REPLY: &str = "gRPC Workload/Compute {\"value\": 3}";
const LOAD: &str = "gRPC Workload/Compute {\"value\": 3} (40 calls)";
const TOO_LARGE: &str = "gRPC Workload/Compute {\"value\": 100001}";
const STREAM: &str = "gRPC Workload/Echo (10 calls of 5 messages)";

/// What the engine's run of some calls came to.
struct Calls {
    completed: u64,
    failed: u64,
    /// Failure classes with their counts, e.g. `grpc_unimplemented: 40`.
    classes: Vec<String>,
    sent: u64,
    received: u64,
}

impl Calls {
    /// The counts, and a stream's messages (the engine counts a unary call's as the call).
    fn describe(&self, stream: bool) -> String {
        let classes = match self.classes.is_empty() {
            true => String::new(),
            false => format!(" ({})", self.classes.join(", ")),
        };
        let messages = match stream {
            true => format!("; {} messages sent, {} answers", self.sent, self.received),
            false => String::new(),
        };
        format!(
            "{} completed, {} failed{classes}{messages}",
            self.completed, self.failed
        )
    }
}

/// Where the target's gRPC service is: its address, and over HTTPS the CA to trust.
struct Service {
    url: String,
    ca_pem: Option<Vec<u8>>,
    timeout: Duration,
}

impl Runner<'_> {
    /// Runs the checks, or records why they were skipped (`implemented`: the manifest's
    /// capability, or `lab verify URL --grpc`). `ca_pem`: the target serves HTTPS.
    pub(super) async fn grpc(&mut self, ca_pem: Option<Vec<u8>>, implemented: bool) {
        if !implemented {
            let reason = "the target does not serve the contract's gRPC service (its \
                          target.toml lacks capabilities = [\"grpc\"])";
            for label in [REPLY, LOAD, TOO_LARGE, STREAM] {
                let skipped = Outcome::Skip {
                    reason: reason.into(),
                };
                self.record(label, "answers", skipped);
            }
            return;
        }
        let scheme = if ca_pem.is_some() { "https" } else { "http" };
        let service = Arc::new(Service {
            url: format!("{scheme}://{}", self.addr),
            ca_pem,
            timeout: self.options.request_timeout,
        });
        let proto = match tempfile::tempdir().and_then(|dir| {
            let path = dir.path().join("workload.proto");
            std::fs::write(&path, PROTO).map(|()| (dir, path))
        }) {
            Ok(written) => written,
            Err(e) => {
                let why = format!("cannot write the service's .proto to a temporary folder: {e}");
                self.fail(REPLY, "answers", "the checks run", why);
                return;
            }
        };
        let call = |method: &str, json: &str, messages: Option<u64>| {
            GrpcSpec {
                method: method.into(),
                protos: vec![proto.1.clone()],
                includes: Vec::new(),
                reflect: None,
                data: Data::Json(json.into()),
                deadline: None,
                gzip: false,
                max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
                messages,
                message_rate: None,
            }
            .prepare()
            .map(Arc::new)
            .map_err(|e| e.to_string())
        };
        let compute = call(COMPUTE, "3", None);
        let too_large = call(COMPUTE, &(MAX_COMPUTE_N + 1).to_string(), None);
        let echo = call(ECHO, r#""bG9hZGxhYg==""#, Some(ECHO_MESSAGES));
        let (compute, too_large, echo) = match (compute, too_large, echo) {
            (Ok(c), Ok(t), Ok(e)) => (c, t, e),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                let why = format!("loadlab's own copy of workload.proto: {e}");
                self.fail(REPLY, "answers", "the checks run", why);
                return;
            }
        };

        match one_reply(&service, &compute).await {
            Ok(Ok(got)) if got == compute_json(3) => self.record(REPLY, "reply", Outcome::Pass),
            Ok(Ok(got)) => self.fail(REPLY, "reply", compute_json(3), format!("{got:?}")),
            Ok(Err(e)) => self.fail(REPLY, "reply", compute_json(3), e),
            Err(e) => {
                // No gRPC answer at all (nothing serves h2 there): the loads would only
                // count the same refusal, after the engine's reconnection back-off.
                self.fail(REPLY, "reply", compute_json(3), e);
                for label in [LOAD, TOO_LARGE, STREAM] {
                    let reason = format!("not tried: the first call got no answer ({REPLY})");
                    self.record(label, "answers", Outcome::Skip { reason });
                }
                return;
            }
        }

        let ok = format!("{CALLS} completed, 0 failed");
        self.judge(LOAD, "calls", &ok, run(&service, &compute, CALLS).await);

        let refused = "0 completed, 2 failed (grpc_invalid_argument: 2)";
        self.judge(
            TOO_LARGE,
            "status",
            refused,
            run(&service, &too_large, 2).await,
        );

        let echoed = ECHO_CALLS * ECHO_MESSAGES;
        let ok =
            format!("{ECHO_CALLS} completed, 0 failed; {echoed} messages sent, {echoed} answers");
        self.judge(
            STREAM,
            "messages answered",
            &ok,
            run(&service, &echo, ECHO_CALLS).await,
        );
    }

    fn judge(&mut self, label: &str, what: &str, expected: &str, got: Result<Calls, String>) {
        match got.map(|c| c.describe(label == STREAM)) {
            Ok(got) if got == expected => self.record(label, what, Outcome::Pass),
            Ok(got) | Err(got) => self.fail(label, what, expected, got),
        }
    }
}

/// `calls` calls of `call` by the engine, on one connection, four at a time.
async fn run(service: &Arc<Service>, call: &Arc<Call>, calls: u64) -> Result<Calls, String> {
    let spec = loadlab_engine::RunSpec {
        url: service.url.clone(),
        grpc: Some(call.clone()),
        requests: Some(calls),
        connections: Some(1),
        streams: 4,
        threads: Some(1),
        timeout: service.timeout,
        pm_qos: false,
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: service.ca_pem.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    let config = spec.validate().map_err(|e| e.to_string())?;
    // The engine runs its own threads and blocks until they end: off the runtime's.
    let outcome = tokio::task::spawn_blocking(move || {
        loadlab_engine::run(&config, &loadlab_engine::RunControl::new())
    })
    .await
    .map_err(|e| format!("the engine's task failed: {e}"))?
    .map_err(|e| e.to_string())?;
    let recorder = &outcome.recorder;
    let mut errors = [0u64; loadlab_engine::ErrorClass::COUNT];
    let (mut completed, mut failed) = (0, 0);
    for phase in &recorder.phases {
        completed += phase.completed;
        failed += phase.failed;
        for (sum, n) in errors.iter_mut().zip(phase.errors) {
            *sum += n;
        }
    }
    let classes = loadlab_engine::ErrorClass::ALL
        .iter()
        .zip(errors)
        .filter(|(_, n)| *n > 0)
        .map(|(class, n)| format!("{}: {n}", class.key()))
        .collect();
    let (sent, received) = recorder
        .grpc
        .as_ref()
        .map_or((0, 0), |g| (g.messages_sent, g.messages_received));
    Ok(Calls {
        completed,
        failed,
        classes,
        sent,
        received,
    })
}

/// One unary call of `call` (its path, header fields and framed message as the engine sends
/// them) on an HTTP/2 connection of its own; its one answer, a `StringValue`, as text (the
/// inner `Err`: an answer that is not that), or the outer `Err`: no answer at all.
async fn one_reply(service: &Service, call: &Call) -> Result<Result<String, String>, String> {
    let addr: SocketAddr = service
        .url
        .split_once("://")
        .and_then(|(_, a)| a.parse().ok())
        .ok_or_else(|| format!("{} is not an address", service.url))?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("{} {addr}: {e}", super::client::CONNECT_FAILED))?;
        let _ = tcp.set_nodelay(true);
        match &service.ca_pem {
            None => exchange(tcp, &service.url, call).await,
            Some(ca) => {
                let config = loadlab_certs::client_config(ca, &[b"h2"], None)
                    .map_err(|e| format!("the CA: {e}"))?;
                let tls = super::client::TlsClient::new(config, addr);
                let stream = tls
                    .connector
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(|e| format!("the TLS handshake failed: {e}"))?;
                exchange(stream, &service.url, call).await
            }
        }
    };
    tokio::time::timeout(service.timeout, exchange)
        .await
        .map_err(|_| format!("no answer within {} ms", service.timeout.as_millis()))?
}

async fn exchange<T>(io: T, base: &str, call: &Call) -> Result<Result<String, String>, String>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use http_body_util::{BodyExt as _, Full};
    let (mut send, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(io),
    )
    .await
    .map_err(|e| format!("HTTP/2 handshake: {e} (does the target serve h2 here?)"))?;
    tokio::spawn(connection);
    let mut request = hyper::Request::post(format!("{base}{}", call.path));
    for (k, v) in &call.headers {
        request = request.header(k, v);
    }
    let request = request
        .body(Full::new(call.body.clone()))
        .map_err(|e| e.to_string())?;
    let response = send
        .send_request(request)
        .await
        .map_err(|e| format!("the call failed: {e}"))?;
    let status = response.status();
    let collected = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("the answer failed: {e}"))?;
    let grpc_status = collected
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = collected.to_bytes();
    if status != 200 || grpc_status.as_deref() != Some("0") {
        return Ok(Err(format!(
            "HTTP status {status}, grpc-status {}",
            grpc_status.as_deref().unwrap_or("none")
        )));
    }
    Ok(string_value(&body)
        .ok_or_else(|| format!("an answer that is not one StringValue: {body:?}")))
}

/// The text of the one `google.protobuf.StringValue` framed in `body` (its only field, 1,
/// length-delimited; an empty message is the empty string).
fn string_value(body: &Bytes) -> Option<String> {
    let (&flag, rest) = body.split_first()?;
    let length = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let message = rest.get(4..)?;
    if flag != 0 || message.len() != length {
        return None;
    }
    if message.is_empty() {
        return Some(String::new());
    }
    let (&tag, mut rest) = message.split_first()?;
    let mut len = 0usize;
    for shift in (0..35).step_by(7) {
        let (&b, tail) = rest.split_first()?;
        rest = tail;
        len |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
    }
    (tag == 0x0a && rest.len() == len)
        .then(|| String::from_utf8(rest.to_vec()).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_value_is_read_from_its_frame() {
        let framed = |m: &[u8]| {
            let mut b = vec![0, 0, 0, 0, m.len() as u8];
            b.extend_from_slice(m);
            Bytes::from(b)
        };
        assert_eq!(string_value(&framed(b"\x0a\x02[]")).as_deref(), Some("[]"));
        assert_eq!(string_value(&framed(b"")).as_deref(), Some(""));
        let long = "x".repeat(200);
        let mut m = vec![0x0a, 0xc8, 0x01];
        m.extend_from_slice(long.as_bytes());
        let mut b = vec![0, 0, 0, 0, 203];
        b.extend_from_slice(&m);
        assert_eq!(string_value(&Bytes::from(b)).as_deref(), Some(&long[..]));
        assert_eq!(string_value(&framed(b"\x12\x02[]")), None, "another field");
        assert_eq!(string_value(&framed(b"\x0a\x05[]")), None, "cut short");
        assert_eq!(string_value(&Bytes::from_static(b"\x01\0\0\0\0")), None);
    }
}
