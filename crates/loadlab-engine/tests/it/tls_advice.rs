//! Each class of refused TLS handshake has its own plain message naming the problem and the
//! fix (issue 29): expired, not yet valid, wrong name, unknown CA, the server's refusal for
//! want of a client certificate, and a TLS version the server does not speak. Every
//! certificate is made by the `openssl` command line; the servers are real rustls servers.

use loadlab_engine::tls::{TlsSpec, TlsVersion};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Behavior, OpensslCert, TestServer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use std::time::Duration;

use crate::common;

const LOCAL_SAN: &str = "DNS:localhost,IP:127.0.0.1";
const REQUESTS: u64 = 6;

fn run(server: &TestServer, tls: TlsSpec) -> RunResult {
    let spec = RunSpec {
        url: format!("https://{}/", server.addr()),
        tls,
        requests: Some(REQUESTS),
        connections: Some(1),
        threads: Some(1),
        ..RunSpec::default()
    };
    common::run_within(spec, Duration::from_secs(30))
}

fn trusting(ca: &OpensslCert) -> TlsSpec {
    TlsSpec {
        ca_pem: Some(ca.cert_pem.clone()),
        ..TlsSpec::default()
    }
}

/// Every request failed in `class`; the detail has each of `says` and none of `never`.
fn refused(r: &RunResult, class: &str, says: &[&str], never: &[&str]) -> String {
    assert_eq!(r.measured.requests.completed, 0, "{:?}", r.measured);
    assert_eq!(
        r.measured.errors.get(class),
        Some(&REQUESTS),
        "{:?} {:?}",
        r.measured.errors,
        r.measured.error_details
    );
    let detail = r.measured.error_details[class].clone();
    for s in says {
        assert!(detail.contains(s), "{detail:?} lacks {s:?}");
    }
    for n in never
        .iter()
        .chain(&["Context", "UnixTime", "InvalidCertificate"])
    {
        assert!(!detail.contains(n), "{detail:?} has {n:?}");
    }
    detail
}

fn config(
    leaf: &OpensslCert,
    versions: &[&'static rustls::SupportedProtocolVersion],
    client_ca: Option<&OpensslCert>,
) -> Arc<rustls::ServerConfig> {
    let chain = CertificateDer::pem_slice_iter(&leaf.cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(&leaf.key_pem).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(&ca.cert_pem).unwrap())
                .unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

fn serve(config: Arc<rustls::ServerConfig>) -> TestServer {
    TestServer::start_tls_with(Behavior::Fixed(response(200, "tls")), config)
}

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS12, &rustls::version::TLS13];

#[test]
fn certificates_refused_by_date_say_when_and_do_not_point_at_cacert() {
    let expired = OpensslCert::expired("localhost", LOCAL_SAN);
    let server = serve(config(&expired, BOTH, None));
    refused(
        &run(&server, trusting(&expired)),
        "tls_certificate",
        &[
            "expired on 2020-02-01 00:00:00 UTC",
            "renew it",
            "--insecure",
        ],
        &["--cacert"],
    );

    let early = OpensslCert::not_yet_valid("localhost", LOCAL_SAN);
    let server = serve(config(&early, BOTH, None));
    refused(
        &run(&server, trusting(&early)),
        "tls_certificate",
        &[
            "not valid before 2099-01-01 00:00:00 UTC",
            "clock",
            "--insecure",
        ],
        &["--cacert"],
    );
}

#[test]
fn a_wrong_name_names_both_and_an_unknown_ca_asks_for_cacert() {
    let (ca, leaf) = OpensslCert::leaf_under_new_ca("elsewhere.example", "DNS:elsewhere.example");
    let server = serve(config(&leaf, BOTH, None));
    refused(
        &run(&server, trusting(&ca)),
        "tls_certificate",
        &[
            "is for elsewhere.example and not for 127.0.0.1",
            "URL whose host",
        ],
        &["--cacert"],
    );

    let (_, leaf) = OpensslCert::leaf_under_new_ca("localhost", LOCAL_SAN);
    let (stranger, _) = OpensslCert::leaf_under_new_ca("localhost", LOCAL_SAN);
    let server = serve(config(&leaf, BOTH, None));
    refused(
        &run(&server, trusting(&stranger)),
        "tls_certificate",
        &["signed by a CA that is not trusted here", "--cacert FILE"],
        &[],
    );
}

#[test]
fn the_servers_refusals_name_the_client_certificate_and_the_version() {
    let (ca, leaf) = OpensslCert::leaf_under_new_ca("localhost", LOCAL_SAN);
    // TLS 1.2: a server requiring a client certificate refuses the handshake itself.
    let server = serve(config(&leaf, &[&rustls::version::TLS12], Some(&ca)));
    refused(
        &run(&server, trusting(&ca)),
        "tls_handshake",
        &["client certificate", "--cert FILE --key FILE"],
        &[],
    );

    let server = serve(config(&leaf, &[&rustls::version::TLS13], None));
    let tls = TlsSpec {
        version: Some(TlsVersion::V1_2),
        ..trusting(&ca)
    };
    refused(
        &run(&server, tls),
        "tls_handshake",
        &["--tls-version"],
        &["--cacert"],
    );
}

/// TLS 1.3 finishes the client's side of the handshake before the server checks the client
/// certificate: a server that requires one says no only with an alert on the first read
/// (`certificate_required` without one, `unknown_ca` or `bad_certificate` for one it does not
/// trust). Both are `tls_handshake` with the fix in words, never a reset nor rustls's text.
#[test]
fn a_tls13_refusal_of_the_client_certificate_after_the_handshake_names_the_fix() {
    let (ca, leaf) = OpensslCert::leaf_under_new_ca("localhost", LOCAL_SAN);
    let server = serve(config(&leaf, &[&rustls::version::TLS13], Some(&ca)));
    let detail = refused(
        &run(&server, trusting(&ca)),
        "tls_handshake",
        &["requires a client certificate", "--cert FILE --key FILE"],
        &["AlertReceived", "CertificateRequired"],
    );
    assert!(!detail.contains("reset"), "{detail}");

    // A client certificate from a CA the server does not know.
    let (_, stranger) = OpensslCert::leaf_under_new_ca("loadlab client", "DNS:client.example");
    let tls = TlsSpec {
        cert_pem: Some(stranger.cert_pem.clone()),
        key_pem: Some(stranger.key_pem.clone()),
        ..trusting(&ca)
    };
    refused(
        &run(&server, tls),
        "tls_handshake",
        &[
            "refused loadlab's client certificate",
            "--cert FILE --key FILE",
        ],
        &["AlertReceived"],
    );
}
