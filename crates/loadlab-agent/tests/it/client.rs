//! The generator's client against a real agent in-process: it pins the agent's
//! certificate, recovers an injected clock offset, opens a session, collects samples of a
//! process that burns CPU, and names the fix when the token or the fingerprint is wrong.

use crate::support;

use loadlab_agent::client::{AgentClient, AgentEndpoint, ClientError};
use loadlab_agent::clock::LocalClock;
use loadlab_agent::protocol::{OpenSession, ServerRequest, StartSampling};
use std::io::Write as _;
use std::time::Duration;

/// An endpoint with its token file, which is removed when this drops.
pub(crate) struct Endpoint {
    endpoint: AgentEndpoint,
    _token_file: tempfile::TempPath,
}

impl std::ops::Deref for Endpoint {
    type Target = AgentEndpoint;
    fn deref(&self) -> &AgentEndpoint {
        &self.endpoint
    }
}

impl std::ops::DerefMut for Endpoint {
    fn deref_mut(&mut self) -> &mut AgentEndpoint {
        &mut self.endpoint
    }
}

pub(crate) fn endpoint(agent: &support::Agent, token: &str, name: &str) -> Endpoint {
    let mut file = tempfile::Builder::new()
        .prefix(&format!("loadlab-agent-client-{name}-"))
        .tempfile()
        .unwrap();
    writeln!(file, "{token}").unwrap();
    let token_file = file.into_temp_path();
    Endpoint {
        endpoint: AgentEndpoint {
            url: format!("https://{}", agent.addr),
            token_file: token_file.to_path_buf(),
            fingerprint: Some(agent.fingerprint.clone()),
            cacert: None,
        },
        _token_file: token_file,
    }
}

#[test]
fn an_injected_clock_offset_is_recovered_within_the_estimates_own_bound() {
    let agent = support::start(|c| c.clock = c.clock.with_offset_ms(-1_750));
    let (mut client, hello) =
        AgentClient::connect(&endpoint(&agent, support::TOKEN, "clock")).unwrap();
    assert_eq!(hello.protocol, loadlab_agent::protocol::PROTOCOL);
    let estimate = client.estimate_clock(&LocalClock::new(), 8).unwrap();
    // Half the round trip bounds the error (NTP's bound, from the estimate's own measured
    // delay): on one host, with one monotonic clock, it holds on any machine. An absolute
    // "within 1 ms" would test the machine's scheduling, not the estimate (docs/testing.md).
    let error_ns = (estimate.offset_ns + 1_750_000_000).abs();
    println!("-1.75 s injected: {estimate:?}, off by {error_ns} ns");
    assert!(
        error_ns <= estimate.uncertainty_ns + 1,
        "offset {} ns, -1.75 s injected, off by {error_ns} ns, beyond the uncertainty {} ns",
        estimate.offset_ns,
        estimate.uncertainty_ns
    );
}

#[test]
fn a_session_samples_a_process_that_burns_cpu() {
    let agent = support::start(|_| {});
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let (mut client, _) =
        AgentClient::connect(&endpoint(&agent, support::TOKEN, "session")).unwrap();
    let opened = client
        .open(&OpenSession {
            server: ServerRequest::Pid { pid: child.id() },
            client: "test".into(),
            run: None,
            lease_ms: None,
        })
        .unwrap();
    assert_eq!(opened.pid, Some(child.id()));
    client
        .start_sampling(
            &opened.session,
            &StartSampling {
                every_ms: 50,
                port: None,
            },
        )
        .unwrap();
    // Long polls until ten samples have come, however busy the machine is.
    let mut samples: Vec<loadlab_agent::protocol::WireSample> = Vec::new();
    while samples.len() < 10 {
        let after = samples.last().map_or(0, |s| s.seq);
        let batch = client
            .samples(&opened.session, after, Duration::from_secs(2))
            .unwrap();
        samples.extend(batch.samples);
    }
    client.stop_sampling(&opened.session).unwrap();
    client.close(&opened.session).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let (first, last) = (samples.first().unwrap(), samples.last().unwrap());
    let cores = (last.cpu_ns - first.cpu_ns) as f64 / (last.at_ns - first.at_ns) as f64;
    // A busy loop on a machine that may be busy too: some of a core, never more than one
    // (beyond the sampling's own jitter).
    assert!(
        last.cpu_ns > first.cpu_ns,
        "no CPU counted: {first:?} {last:?}"
    );
    assert!(cores <= 1.1, "{cores} cores");
    // A second session is refused while one is open... and free again once closed.
    let again = client.open(&OpenSession {
        server: ServerRequest::Pid {
            pid: std::process::id(),
        },
        client: "test".into(),
        run: None,
        lease_ms: None,
    });
    let opened = again.expect("the closed session freed the agent");
    client.close(&opened.session).unwrap();
}

#[test]
fn a_wrong_token_or_fingerprint_names_the_fix() {
    let agent = support::start(|_| {});
    let wrong = endpoint(&agent, "fedcba9876543210fedcba9876543210", "wrong");
    let err = AgentClient::connect(&wrong).unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    assert!(err.to_string().contains("--agent-token-file"), "{err}");
    let mut pinned = endpoint(&agent, support::TOKEN, "pin");
    pinned.fingerprint = Some(format!("sha256:{}", ["AB"; 32].join(":")));
    let err = AgentClient::connect(&pinned).unwrap_err();
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("--agent-fingerprint"), "{err}");
    let mut none = endpoint(&agent, support::TOKEN, "none");
    none.fingerprint = None;
    let err = AgentClient::connect(&none).unwrap_err();
    assert!(err.to_string().contains("--agent-cacert"), "{err}");
}

/// `--agent-cacert` follows the one trust path (loadlab_certs::Verifier): an agent serving
/// a certificate made by `openssl req -x509` (CA:TRUE, its own issuer) is trusted when that
/// very certificate is the file, as `run --cacert` and `--metrics-cacert` trust it; another
/// such certificate is refused before a request is sent.
#[test]
fn an_openssl_self_signed_agent_certificate_given_as_the_cacert_is_trusted() {
    let san = "DNS:localhost,IP:127.0.0.1";
    let served = loadlab_testkit::OpensslCert::req_x509("localhost", san);
    let tls = served.server_config(&[b"http/1.1"]);
    let agent = support::start(move |config| config.tls = tls);
    let dir = tempfile::tempdir().unwrap();
    let with_file = |name: &str, pem: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        let mut e = endpoint(&agent, support::TOKEN, name);
        e.fingerprint = None;
        e.cacert = Some(path);
        e
    };
    AgentClient::connect(&with_file("served", &served.cert_pem)).unwrap();
    let other = loadlab_testkit::OpensslCert::req_x509("localhost", san);
    let err = AgentClient::connect(&with_file("other", &other.cert_pem)).unwrap_err();
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("CaUsedAsEndEntity"), "{err}");
}

/// A session's own connection sits idle for a whole run while the keeper polls on another;
/// the agent closes a connection idle for 10 s (its header timeout). The next call must go
/// out on a new connection, not into the closed one (a capacity search's second probe lost
/// its server figures that way after the first probe's 30 s warm-up). Real time: the agent's
/// timeout is what is tested.
#[test]
fn a_call_after_the_agent_closed_an_idle_connection_goes_out_on_a_new_one() {
    let agent = support::start(|_| {});
    let (mut client, _) = AgentClient::connect(&endpoint(&agent, support::TOKEN, "idle")).unwrap();
    let opened = client
        .open(&OpenSession {
            server: ServerRequest::Pid {
                pid: std::process::id(),
            },
            client: "test".into(),
            run: None,
            lease_ms: Some(60_000),
        })
        .unwrap();
    // Waited for, not slept for (it slept a fixed 11 s): until the agent has closed the idle
    // connection (our end of it no longer ESTABLISHED), which its 10 s header timeout does;
    // 60 s is a hang, not a slow machine.
    assert!(
        established_to(agent.addr.port()),
        "no connection to the agent"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while established_to(agent.addr.port()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never closed the idle connection (still ESTABLISHED to port {})",
            agent.addr.port()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    client
        .start_sampling(
            &opened.session,
            &StartSampling {
                every_ms: 50,
                port: None,
            },
        )
        .expect("a call after the agent closed the idle connection");
    client.stop_sampling(&opened.session).unwrap();
    client.close(&opened.session).unwrap();
}

/// Whether a TCP connection to 127.0.0.1:`port` is open both ways (ESTABLISHED, state 01 in
/// /proc/net/tcp): once the agent closes it, our end moves to CLOSE_WAIT.
fn established_to(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/self/net/tcp").unwrap();
    let remote = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.get(2) == Some(&remote.as_str()) && fields.get(3) == Some(&"01")
    })
}
