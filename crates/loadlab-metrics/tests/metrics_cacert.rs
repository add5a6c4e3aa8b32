//! `--metrics-cacert` trusts what the load engine's `--cacert` trusts (issue 45 item 3): a
//! `/metrics` endpoint served over real HTTPS on loopback with a certificate made by the
//! `openssl` command line as users make it (`req -x509`, CA:TRUE, its own issuer), scraped by
//! the scraper `--server-metrics` starts. Given that certificate as the CA file, every scrape
//! answers; given another such certificate, an expired one, or none (the system's roots),
//! every scrape is refused with the reason and the flag that fixes it, and the endpoint never
//! answers a request.

use loadlab_certs::rustls;
use loadlab_metrics::http::HttpOptions;
use loadlab_metrics::scraper::{ScrapeReport, Scraper, ScraperConfig};
use loadlab_metrics::Selector;
use loadlab_testkit::OpensslCert;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const LOCAL_SAN: &str = "DNS:localhost,IP:127.0.0.1";
const PAGE: &str = "# TYPE app_up gauge\napp_up 1\n";

/// An HTTPS `/metrics` endpoint on 127.0.0.1:0 presenting `cert`, answering every request
/// of each connection with [`PAGE`]; counts the requests it answers (on reading each one). Its thread ends with
/// the test process.
struct Endpoint {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
}

impl Endpoint {
    fn start(cert: &OpensslCert) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let config = cert.server_config(&[b"http/1.1"]);
        let answered = Arc::new(AtomicU64::new(0));
        let counter = answered.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().map_while(Result::ok) {
                let config = config.clone();
                let counter = counter.clone();
                std::thread::spawn(move || serve(config, tcp, &counter));
            }
        });
        Endpoint { addr, answered }
    }

    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}/metrics", self.addr.port())
    }
}

fn serve(config: Arc<rustls::ServerConfig>, tcp: std::net::TcpStream, answered: &AtomicU64) {
    let Ok(conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = BufReader::new(rustls::StreamOwned::new(conn, tcp));
    loop {
        // A request: its head up to the empty line (GETs carry no body).
        let mut line = String::new();
        loop {
            line.clear();
            match tls.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => continue,
            }
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
             Content-Length: {}\r\n\r\n{PAGE}",
            PAGE.len()
        );
        // Counted before the answer is written, so a scraper holding its answer always finds
        // it counted (counted after, the test thread could read the count first: CI saw 1 of 2).
        answered.fetch_add(1, Ordering::SeqCst);
        if tls.get_mut().write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// Writes `cert` as a PEM file for `--metrics-cacert`.
fn ca_file(dir: &std::path::Path, name: &str, cert: &OpensslCert) -> String {
    let path = dir.join(name);
    std::fs::write(&path, &cert.cert_pem).unwrap();
    path.display().to_string()
}

/// One scraper run (a scrape at the start and one at the stop: two, whatever the clock).
fn scrape(url: &str, ca: Option<&str>) -> ScrapeReport {
    let http = HttpOptions {
        ca: ca.map(|file| HttpOptions::read_ca(file).expect("a PEM file")),
        bearer_token: None,
    };
    let scraper = Scraper::start(ScraperConfig {
        urls: vec![url.to_string()],
        selectors: vec![Selector::parse("app_up").unwrap()],
        interval: Duration::from_secs(3600),
        timeout: Duration::from_secs(10),
        http,
    })
    .unwrap();
    scraper.finish()
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("loadlab-metrics-cacert-")
        .tempdir()
        .unwrap()
}

#[test]
fn the_openssl_self_signed_certificate_given_as_the_ca_file_is_trusted() {
    let cert = OpensslCert::req_x509("localhost", LOCAL_SAN);
    let endpoint = Endpoint::start(&cert);
    let dir = scratch();
    let ca = ca_file(dir.path(), "cert.pem", &cert);
    for host in ["127.0.0.1", "localhost"] {
        let before = endpoint.answered.load(Ordering::SeqCst);
        let report = scrape(&endpoint.url(host), Some(&ca));
        assert_eq!(report.failures, vec![], "{host}");
        assert_eq!(report.scrapes_ok, 2, "{host}");
        assert_eq!(report.points.len(), 2, "{host}");
        for point in &report.points {
            assert_eq!(point.picked.len(), 1, "{point:?}");
            assert_eq!(point.picked[0].series, "app_up");
            assert_eq!(point.picked[0].value, 1.0);
        }
        assert_eq!(endpoint.answered.load(Ordering::SeqCst) - before, 2);
    }
}

#[test]
fn a_certificate_signed_by_an_openssl_ca_is_trusted_through_that_ca() {
    let (ca, leaf) = OpensslCert::leaf_under_new_ca("localhost", LOCAL_SAN);
    let endpoint = Endpoint::start(&leaf);
    let dir = scratch();
    let report = scrape(
        &endpoint.url("127.0.0.1"),
        Some(&ca_file(dir.path(), "ca.pem", &ca)),
    );
    assert_eq!(report.failures, vec![]);
    assert_eq!(report.scrapes_ok, 2);
    assert_eq!(endpoint.answered.load(Ordering::SeqCst), 2);
}

/// Every scrape of `url` with `ca` fails (two of two, none answered by the endpoint); the
/// last error.
fn refused(endpoint: &Endpoint, ca: Option<&str>) -> String {
    let report = scrape(&endpoint.url("127.0.0.1"), ca);
    assert_eq!(report.scrapes_ok, 0, "{report:?}");
    assert_eq!(report.failures.len(), 1, "{report:?}");
    assert_eq!(report.failures[0].count, 2, "{report:?}");
    assert_eq!(endpoint.answered.load(Ordering::SeqCst), 0);
    report.failures[0].last_error.clone()
}

#[test]
fn another_self_signed_certificate_expired_or_none_is_refused_with_the_fix() {
    let served = OpensslCert::req_x509("localhost", LOCAL_SAN);
    let endpoint = Endpoint::start(&served);
    let dir = scratch();
    // Another `req -x509` certificate for the same names does not vouch for this one.
    let other = ca_file(
        dir.path(),
        "other.pem",
        &OpensslCert::req_x509("localhost", LOCAL_SAN),
    );
    let e = refused(&endpoint, Some(&other));
    assert!(
        e.contains("self-signed")
            && e.contains("not one of the trusted ones")
            && e.contains("--metrics-cacert FILE"),
        "{e}"
    );
    // No CA file: the system's roots do not know it (webpki reads CA:TRUE before the
    // issuer, so the reason is the same), and the fix is the same flag.
    let e = refused(&endpoint, None);
    assert!(
        e.contains("self-signed") && e.contains("--metrics-cacert FILE"),
        "{e}"
    );

    // The very certificate, but expired: webpki's validity check still refuses it.
    let expired = OpensslCert::expired("localhost", LOCAL_SAN);
    let endpoint = Endpoint::start(&expired);
    let e = refused(
        &endpoint,
        Some(&ca_file(dir.path(), "expired.pem", &expired)),
    );
    assert!(
        e.contains("expired") && e.contains("--metrics-cacert"),
        "{e}"
    );
}

#[test]
fn a_name_the_certificate_does_not_carry_is_refused() {
    // Only DNS:localhost: dialing 127.0.0.1 must fail the name check.
    let cert = OpensslCert::req_x509("localhost", "DNS:localhost");
    let endpoint = Endpoint::start(&cert);
    let dir = scratch();
    let e = refused(&endpoint, Some(&ca_file(dir.path(), "cert.pem", &cert)));
    assert!(
        e.contains("TLS handshake failed") && e.contains("not valid for name"),
        "{e}"
    );
}
