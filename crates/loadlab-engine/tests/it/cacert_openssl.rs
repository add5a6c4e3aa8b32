//! `--cacert` with certificates made as users make them, by the `openssl` command line
//! (issue 27, item 3): the `req -x509` certificate (CA:TRUE) served by a real TLS server is
//! trusted when it is the `--cacert` file; another self-signed certificate, an expired one
//! and one for another name are still rejected with the certificate error class.

use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Behavior, OpensslCert, TestServer};
use std::time::Duration;

use crate::common;

const LOCAL_SAN: &str = "DNS:localhost,IP:127.0.0.1";

fn run_trusting(server: &TestServer, cacert: &OpensslCert) -> RunResult {
    let spec = RunSpec {
        url: format!("https://{}/", server.addr()),
        tls: TlsSpec {
            ca_pem: Some(cacert.cert_pem.clone()),
            ..TlsSpec::default()
        },
        requests: Some(20),
        connections: Some(2),
        threads: Some(1),
        ..RunSpec::default()
    };
    common::run_within(spec, Duration::from_secs(30))
}

fn serve(cert: &OpensslCert) -> TestServer {
    TestServer::start_tls_with(
        Behavior::Fixed(response(200, "self-signed")),
        cert.server_config(&[b"http/1.1"]),
    )
}

/// Every request failed on the certificate, and the detail says which check refused it.
fn assert_certificate_rejected(r: &RunResult, why: &str) {
    assert_eq!(r.measured.requests.completed, 0, "{:?}", r.measured);
    assert_eq!(
        r.measured.errors.get("tls_certificate"),
        Some(&20),
        "{:?}",
        r.measured.errors
    );
    let detail = &r.measured.error_details["tls_certificate"];
    assert!(detail.contains(why), "{detail}");
}

#[test]
fn an_openssl_req_x509_certificate_is_trusted_as_its_own_cacert() {
    let cert = OpensslCert::req_x509("localhost", LOCAL_SAN);
    assert!(
        String::from_utf8_lossy(&cert.cert_pem).contains("BEGIN CERTIFICATE"),
        "openssl wrote a certificate"
    );
    let server = serve(&cert);
    let r = run_trusting(&server, &cert);
    assert_eq!(
        r.measured.requests.completed, 20,
        "{:?} {:?}",
        r.measured.errors, r.measured.error_details
    );
    assert_eq!(r.measured.status_codes.get("200"), Some(&20));

    // Another self-signed certificate as --cacert: the server's is not one of the trusted
    // ones, and the detail says what to pass instead.
    let stranger = OpensslCert::req_x509("localhost", LOCAL_SAN);
    assert_certificate_rejected(
        &run_trusting(&server, &stranger),
        "not one of the --cacert certificates: pass that very certificate with --cacert FILE",
    );
}

#[test]
fn an_expired_or_misnamed_req_x509_certificate_is_still_rejected() {
    let expired = OpensslCert::expired("localhost", LOCAL_SAN);
    let server = serve(&expired);
    assert_certificate_rejected(&run_trusting(&server, &expired), "expired on 2020-02-01");

    // Valid now, trusted, but for another name than the 127.0.0.1 the run dials.
    let misnamed = OpensslCert::req_x509("elsewhere.example", "DNS:elsewhere.example");
    let server = serve(&misnamed);
    assert_certificate_rejected(
        &run_trusting(&server, &misnamed),
        "is for elsewhere.example and not for 127.0.0.1",
    );
}
