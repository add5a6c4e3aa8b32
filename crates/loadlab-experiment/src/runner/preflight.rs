//! Before anything is measured: every lab target built and verified against the contract,
//! every URL health-checked, and the mock upstream the targets' `/upstream` calls, started on
//! a thread of its own for the whole experiment.

use super::{open_lab, Event, Options, RunError};
use crate::file::{Experiment, Source};
use loadlab_lab::verify::{verify_target, VerifyOptions};
use loadlab_lab::{Lab, ServeOptions};

/// Builds what is not built, verifies every lab target against the contract and
/// health-checks every URL, before anything is measured.
pub(super) fn preflight(
    experiment: &Experiment,
    options: &Options,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<Lab>, RunError> {
    let err = RunError::Preflight;
    let targets: Vec<&str> = experiment
        .variants
        .iter()
        // A target on an agent's host is built and verified there (`loadlab lab verify` on
        // that host); this machine's lab may not even have it.
        .filter(|v| v.agent.is_none())
        .filter_map(|v| match &v.source {
            Source::Target(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let lab = if targets.is_empty() {
        None
    } else {
        let lab = open_lab(options.targets.as_deref()).map_err(|e| err(e.to_string()))?;
        // Read before planning too (`read_lab_targets_from`); checked again here for a caller
        // that did not, before anything is built.
        experiment.check_target_capabilities(&lab).map_err(err)?;
        Some(lab)
    };
    // Launched servers are served over TLS in the arms whose protocol is encrypted; verified
    // so then (HTTPS, and HTTP/3 for a target that declares it), as the runs will load them.
    let over_tls = experiment.protocols().iter().any(|p| p.encrypted());
    if let Some(lab) = &lab {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| err(format!("cannot start the async runtime: {e}")))?;
        for name in &targets {
            on_event(Event::Building(name.to_string()));
            lab.build_named(name, false)
                .map_err(|e| err(format!("{name}: {e}")))?;
            if options.skip_verify {
                continue;
            }
            on_event(Event::Verifying(name.to_string()));
            let verify = VerifyOptions {
                content_dir: Some(lab.content_dir()),
                tls: over_tls,
                ..VerifyOptions::default()
            };
            let report = runtime
                .block_on(verify_target(lab, name, &ServeOptions::default(), &verify))
                .map_err(|e| err(format!("{name}: {e}")))?;
            let (pass, fail, skip) = report.counts();
            if !report.passed() {
                return Err(err(format!(
                    "{name} failed verification ({fail} of {} checks: {}); it answers wrongly, \
                     so it is not benchmarked: see `loadlab lab verify {name}`",
                    pass + fail + skip,
                    report.failed_endpoints().join(", ")
                )));
            }
            on_event(Event::Verified {
                name: name.to_string(),
                summary: format!("{pass} checks passed, {skip} skipped"),
            });
        }
    }
    for v in &experiment.variants {
        if let Source::Url(url) = &v.source {
            let path = v
                .healthz
                .clone()
                .unwrap_or_else(|| experiment.base.paths[0].clone());
            on_event(Event::Verifying(url.clone()));
            let websocket = url.starts_with("ws://") || url.starts_with("wss://");
            if !url_answers(url, &path) {
                return Err(err(if websocket {
                    format!(
                        "{}: nothing accepts connections at {url}; start the server",
                        v.name
                    )
                } else {
                    format!(
                        "{}: GET {url}{path} did not answer 2xx; start the server, or set the \
                         variant's healthz to a path it answers",
                        v.name
                    )
                }));
            }
            on_event(Event::Verified {
                name: url.clone(),
                summary: if websocket {
                    "it accepts connections".to_string()
                } else {
                    format!("GET {path} answered 2xx")
                },
            });
        }
    }
    Ok(lab)
}

/// Whether `url`'s host answers `GET path` with a 2xx (an https URL: whether its host
/// resolves; a ws or wss URL: whether it accepts a connection). Never panics: a URL that
/// does not parse does not answer.
fn url_answers(url: &str, path: &str) -> bool {
    use std::net::ToSocketAddrs;
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    let (Some(host), Some(port)) = (parsed.host(), parsed.port_or_known_default()) else {
        return false;
    };
    // Sockets want an IPv6 literal without its brackets.
    let host = match host {
        url::Host::Ipv6(ip) => ip.to_string(),
        other => other.to_string(),
    };
    let mut addrs = match (host.as_str(), port).to_socket_addrs() {
        Ok(addrs) => addrs,
        Err(_) => return false,
    };
    if parsed.scheme() == "https" {
        // A TLS health check needs the engine's TLS stack; the first run will tell.
        return true;
    }
    if matches!(parsed.scheme(), "ws" | "wss") {
        // A WebSocket server answers a plain GET with 400 or 426: that it accepts
        // connections is what can be known before the upgrade, which the first run makes.
        return addrs.next().is_some_and(|addr| {
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).is_ok()
        });
    }
    addrs
        .next()
        .is_some_and(|addr| loadlab_probe::launch::healthz(addr, path))
}

/// A mock upstream on a thread of its own, for targets' `/upstream` endpoint.
pub(super) struct MockUpstream {
    pub(super) url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockUpstream {
    pub(super) fn start() -> Result<MockUpstream, String> {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                match loadlab_upstream::Upstream::start(Default::default()).await {
                    Ok(up) => {
                        let _ = url_tx.send(Ok(up.url()));
                        let _ = stopped.await;
                        let _ = up.shutdown().await;
                    }
                    Err(e) => {
                        let _ = url_tx.send(Err(e.to_string()));
                    }
                }
            });
        });
        let url = url_rx
            .recv()
            .map_err(|_| "the mock upstream did not start".to_string())??;
        Ok(MockUpstream {
            url,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for MockUpstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::url_answers;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Whether `url` answers, with a server on `bind` that answers one request with
    /// `status`; also the request line it received.
    fn ask(bind: &str, url_of: impl Fn(u16) -> String, status: &'static str) -> (bool, String) {
        let listener = TcpListener::bind(bind).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            if let Ok((mut stream, _)) = listener.accept() {
                // The request may come in several writes: read its whole head.
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let (mut buf, mut chunk) = (Vec::new(), [0u8; 1024]);
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                let request = String::from_utf8_lossy(&buf).to_string();
                let _ = tx.send(request.lines().next().unwrap_or("").to_string());
            }
        });
        let answered = url_answers(&url_of(port), "/healthz");
        // Bounded, so that a URL read wrong (nothing connects) fails instead of hanging.
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        (answered, line)
    }

    #[test]
    fn url_answers_reads_host_and_port_from_the_url() {
        let url = |port| format!("http://127.0.0.1:{port}/base?x=1");
        let (answered, line) = ask("127.0.0.1:0", url, "200 OK");
        assert!(answered);
        assert_eq!(line, "GET /healthz HTTP/1.1");
        let url = |port| format!("http://127.0.0.1:{port}");
        let (answered, line) = ask("127.0.0.1:0", url, "503 Service Unavailable");
        assert!(!answered);
        assert_eq!(line, "GET /healthz HTTP/1.1");
        // An IPv6 literal (the hand-made split read `[` as the host); skipped where the
        // machine has no IPv6 loopback.
        if TcpListener::bind("[::1]:0").is_ok() {
            let url = |port| format!("http://[::1]:{port}/");
            assert!(ask("[::1]:0", url, "204 No Content").0);
        }
        assert!(!url_answers("127.0.0.1:8080", "/"));
        assert!(!url_answers("http://", "/"));
    }
}
