//! Alt-Svc over HTTPS: a loopback TLS server that advertises HTTP/3 gets one note in the
//! result with the command to load it over QUIC (HTTP/1.1 and HTTP/2); one that does not,
//! or advertises no h3, or speaks cleartext, gets none.

use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Behavior, H2Behavior, H2Server, TestCa, TestServer};
use std::time::Duration;

use crate::common;

const H3_OFFER: &str = r#"h3=":443"; ma=86400, h3-29=":443""#;

fn run(url: String, ca: Option<&TestCa>, http2: bool) -> RunResult {
    let r = common::run_within(
        RunSpec {
            url,
            http2,
            streams: if http2 { 4 } else { 1 },
            connections: Some(4),
            threads: Some(2),
            requests: Some(400),
            tls: TlsSpec {
                ca_pem: ca.map(|ca| ca.pem().into_bytes()),
                ..TlsSpec::default()
            },
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    );
    assert_eq!(
        r.measured.requests.completed, 400,
        "{:?}",
        r.measured.error_details
    );
    r
}

/// An HTTP/1.1 response with `alt_svc` (when given) among its headers.
fn answer(alt_svc: Option<&str>) -> Behavior {
    let mut bytes = response(200, "ok");
    if let Some(value) = alt_svc {
        let at = bytes.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        let field = format!("Alt-Svc: {value}\r\n");
        bytes.splice(at..at, field.into_bytes());
    }
    Behavior::Fixed(bytes)
}

fn the_offer_is_noted_once(r: &RunResult, port: u16) {
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    let note = &r.notes[0];
    assert!(
        note.starts_with(&format!(
            "the server advertises HTTP/3 on UDP port 443 (not {port})"
        )),
        "{note}"
    );
    assert!(
        note.contains("`loadlab run --http3 https://localhost/`"),
        "{note}"
    );
    let offer = r.target.alt_svc.as_ref().expect("the offer in the result");
    assert_eq!(offer.header, H3_OFFER);
    assert_eq!(
        (offer.host.as_deref(), offer.port, offer.max_age_s),
        (None, 443, 86_400)
    );
}

#[test]
fn https_over_http1_with_an_h3_offer_says_how_to_load_it() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(answer(Some(H3_OFFER)), &ca);
    let port = server.addr().port();
    let r = run(format!("https://localhost:{port}/"), Some(&ca), false);
    the_offer_is_noted_once(&r, port);
}

#[test]
fn https_over_http2_with_an_h3_offer_says_how_to_load_it() {
    let ca = TestCa::new();
    let server = H2Server::start_tls(
        H2Behavior {
            alt_svc: Some(H3_OFFER),
            ..H2Behavior::default()
        },
        &ca,
    );
    let port = server.addr().port();
    let r = run(format!("https://localhost:{port}/"), Some(&ca), true);
    the_offer_is_noted_once(&r, port);
}

#[test]
fn no_h3_offer_no_note() {
    let ca = TestCa::new();
    let quiet = TestServer::start_tls(answer(None), &ca);
    let h2_only = TestServer::start_tls(answer(Some(r#"h2=":443""#)), &ca);
    let quiet_h2 = H2Server::start_tls(H2Behavior::default(), &ca);
    for (url, http2) in [
        (format!("https://localhost:{}/", quiet.addr().port()), false),
        (
            format!("https://localhost:{}/", h2_only.addr().port()),
            false,
        ),
        (
            format!("https://localhost:{}/", quiet_h2.addr().port()),
            true,
        ),
    ] {
        let r = run(url.clone(), Some(&ca), http2);
        assert!(r.notes.is_empty(), "{url}: {:?}", r.notes);
        assert_eq!(r.target.alt_svc, None, "{url}");
    }
    // Over cleartext an h3 offer is not for this origin (HTTP/3 is for https).
    let cleartext = TestServer::start(answer(Some(H3_OFFER)));
    let r = run(cleartext.url("/"), None, false);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}
