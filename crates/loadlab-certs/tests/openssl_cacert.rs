//! [`loadlab_certs::client_config`] (what `lab verify https://URL --cacert FILE` and the
//! health checks use) with certificates made by the `openssl` command line: the `req -x509`
//! certificate (CA:TRUE) is trusted when it is itself the CA file; everything else that
//! webpki refuses stays refused, with webpki's reason. Handshakes run in memory.

use loadlab_certs::rustls::pki_types::ServerName;
use loadlab_certs::rustls::{self, CertificateError};
use loadlab_certs::{client_config, server_config};
use loadlab_testkit::OpensslCert;

const LOCAL_SAN: &str = "DNS:localhost,IP:127.0.0.1";

/// The client's verdict on `served`, trusting `trusted`, dialing `name`.
fn handshake(served: &OpensslCert, trusted: &OpensslCert, name: &str) -> Result<(), rustls::Error> {
    let server = server_config(&served.cert_pem, &served.key_pem, &[b"http/1.1"]).unwrap();
    let client = client_config(&trusted.cert_pem, &[b"http/1.1"], None).unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    let mut c = rustls::ClientConnection::new(client, name).unwrap();
    let mut s = rustls::ServerConnection::new(server).unwrap();
    for _ in 0..10 {
        let mut buf = Vec::new();
        c.write_tls(&mut buf).unwrap();
        s.read_tls(&mut buf.as_slice()).unwrap();
        s.process_new_packets()?;
        let mut buf = Vec::new();
        s.write_tls(&mut buf).unwrap();
        c.read_tls(&mut buf.as_slice()).unwrap();
        c.process_new_packets()?;
        if !c.is_handshaking() && !s.is_handshaking() {
            return Ok(());
        }
    }
    panic!("the handshake neither finished nor failed in 10 rounds");
}

fn certificate_error(r: Result<(), rustls::Error>) -> CertificateError {
    match r {
        Err(rustls::Error::InvalidCertificate(e)) => e,
        other => panic!("expected a certificate error, got {other:?}"),
    }
}

#[test]
fn the_req_x509_certificate_is_trusted_by_name_and_address() {
    let cert = OpensslCert::req_x509("localhost", LOCAL_SAN);
    handshake(&cert, &cert, "localhost").unwrap();
    handshake(&cert, &cert, "127.0.0.1").unwrap();
    // A name the certificate does not carry: webpki's name check still refuses it.
    let e = certificate_error(handshake(&cert, &cert, "example.com"));
    assert!(
        matches!(e, CertificateError::NotValidForNameContext { .. }),
        "{e:?}"
    );
}

#[test]
fn another_self_signed_certificate_does_not_vouch_for_it() {
    let served = OpensslCert::req_x509("localhost", LOCAL_SAN);
    let other = OpensslCert::req_x509("localhost", LOCAL_SAN);
    let e = handshake(&served, &other, "localhost").unwrap_err();
    // webpki checks CA:TRUE before the issuer: a stranger's `req -x509` certificate is
    // refused as a CA presented by a server (not one of the trusted certificates).
    assert!(loadlab_certs::is_ca_used_as_end_entity(&e), "{e:?}");
}

#[test]
fn an_expired_req_x509_certificate_stays_rejected() {
    let cert = OpensslCert::expired("localhost", LOCAL_SAN);
    let e = certificate_error(handshake(&cert, &cert, "localhost"));
    assert!(
        matches!(e, CertificateError::ExpiredContext { .. }),
        "{e:?}"
    );
}
