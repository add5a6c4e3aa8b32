//! Throwaway certificates, made in one place for everything that serves or verifies HTTPS in
//! the lab (issue 19): `lab serve --tls`, `lab verify --tls`, `run --target NAME --tls` and
//! `loadlab upstream --tls`.
//!
//! A run gets its own certificate authority and one certificate for the loopback names
//! (`127.0.0.1`, `::1`, `localhost`, plus any address the caller adds), ECDSA P-256 as rcgen
//! makes by default, with the key in PKCS#8: the PEM files the workload contract's `TLS_CERT`
//! and `TLS_KEY` name. [`CertDir`] writes them into a temporary directory that is removed
//! when it is dropped, so nothing a run trusted outlives it. The CA is only ever trusted by
//! the processes of that run (loadlab's client, a target's upstream client through
//! `UPSTREAM_CA`); it is never installed anywhere.
//!
//! It must not choose protocols for a caller beyond what it is asked (ALPN lists are
//! arguments), and it never reads the system's trust store.
//!
//! Layout: [`Authority`] (the CA and what it issues), [`Issued`] (a certificate and its key),
//! [`CertDir`] (the files), and the rustls configurations: [`server_config`],
//! [`client_config`], and the one trust path of every client loadlab makes ([`trust`]:
//! [`Trust`] and its [`Verifier`], which the engine, the metrics client and the agent use).

/// The rustls this crate's configurations are made for, so callers name the same types.
pub use rustls;

pub mod trust;
pub use trust::{fingerprint, is_ca_used_as_end_entity, provider, Trust, Verifier};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What can go wrong making, writing or reading certificates. Each message names the file or
/// the step.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Pem { path: String, message: String },
    #[error("cannot build the TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The names every loopback certificate carries: what a client may dial a local server by.
pub const LOOPBACK_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// A certificate authority made for one run.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}

/// A certificate and its private key, as PEM and as DER.
#[derive(Clone)]
pub struct Issued {
    /// The certificate, PEM (what `TLS_CERT` names).
    pub cert_pem: String,
    /// Its private key, PKCS#8 PEM (what `TLS_KEY` names).
    pub key_pem: String,
    /// The certificate, DER: what a verifier compares the served one with.
    pub cert_der: CertificateDer<'static>,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("Issued")
            .field("cert_der_len", &self.cert_der.len())
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// A new CA, named `common_name` (distinct from its leaves' names, so no verifier mistakes
    /// a leaf for a self-signed certificate).
    pub fn new(common_name: &str) -> Result<Authority, CertError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let key = KeyPair::generate()?;
        Ok(Authority {
            issuer: CertifiedIssuer::self_signed(params, key)?,
        })
    }

    /// The CA certificate, PEM: what `--cacert` and `UPSTREAM_CA` take.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA certificate, DER.
    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server certificate for `names` (IP addresses become IP SANs, anything else DNS SANs).
    pub fn issue(&self, names: &[String]) -> Result<Issued, CertError> {
        let mut params = CertificateParams::new(names.to_vec())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "loadlab lab server");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            cert_der: cert.der().clone(),
        })
    }

    /// [`Authority::issue`] for [`LOOPBACK_NAMES`] and `extra` addresses (a server behind a
    /// shaped link is reached at an address of its own).
    pub fn issue_loopback(&self, extra: &[IpAddr]) -> Result<Issued, CertError> {
        let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|n| n.to_string()).collect();
        for ip in extra {
            let ip = ip.to_string();
            if !names.contains(&ip) {
                names.push(ip);
            }
        }
        self.issue(&names)
    }
}

/// A CA and a loopback certificate written as PEM files into a temporary directory, removed
/// (with the files) when this is dropped.
#[derive(Debug)]
pub struct CertDir {
    dir: tempfile::TempDir,
    ca_pem: String,
    issued: Issued,
}

impl CertDir {
    /// Makes a CA and a certificate for the loopback names and `extra`, and writes `ca.pem`,
    /// `cert.pem` and `key.pem` (mode 0600) into a new temporary directory.
    pub fn create(extra: &[IpAddr]) -> Result<CertDir, CertError> {
        CertDir::create_in(&std::env::temp_dir(), extra)
    }

    /// As [`CertDir::create`], in a new directory under `parent` (an agent's state dir,
    /// where its successor finds and removes key material a killed agent left).
    pub fn create_in(parent: &Path, extra: &[IpAddr]) -> Result<CertDir, CertError> {
        let authority = Authority::new("loadlab throwaway CA")?;
        let issued = authority.issue_loopback(extra)?;
        let dir = tempfile::Builder::new()
            .prefix("loadlab-tls-")
            .tempdir_in(parent)
            .map_err(|source| CertError::Io {
                context: "cannot create a temporary directory for the run's certificates".into(),
                source,
            })?;
        let cert_dir = CertDir {
            dir,
            ca_pem: authority.pem(),
            issued,
        };
        cert_dir.write_to(cert_dir.dir.path())?;
        Ok(cert_dir)
    }

    /// Writes the three files into `dir` as well (`loadlab upstream --tls --tls-dir`).
    pub fn write_to(&self, dir: &Path) -> Result<(), CertError> {
        write(&dir.join("ca.pem"), &self.ca_pem, 0o644)?;
        write(&dir.join("cert.pem"), &self.issued.cert_pem, 0o644)?;
        write(&dir.join("key.pem"), &self.issued.key_pem, 0o600)
    }

    /// The directory (gone after drop).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `TLS_CERT`: the certificate, PEM.
    pub fn cert_path(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    /// `TLS_KEY`: its PKCS#8 private key, PEM.
    pub fn key_path(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }

    /// `--cacert` and `UPSTREAM_CA`: the CA certificate, PEM.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The server certificate and key.
    pub fn issued(&self) -> &Issued {
        &self.issued
    }
}

fn write(path: &Path, contents: &str, mode: u32) -> Result<(), CertError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| CertError::Io {
        context: format!("cannot write {}", path.display()),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .map_err(io)?;
    file.write_all(contents.as_bytes()).map_err(io)
}

/// A rustls server configuration presenting `cert_pem` (a chain) with `key_pem`, offering
/// `alpn`, with a session cache (TLS 1.2 session ids, TLS 1.3 stateful tickets) and a ticketer
/// (stateless tickets), so clients can resume either way.
pub fn server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ServerConfig>, CertError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error("the certificate", e))?;
    if chain.is_empty() {
        return Err(CertError::Pem {
            path: "the certificate".into(),
            message: "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| pem_error("the key", e))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.ticketer = rustls::crypto::ring::Ticketer::new()?;
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(4096);
    Ok(Arc::new(config))
}

/// [`server_config`] for an [`Issued`] certificate.
pub fn server_config_for(
    issued: &Issued,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ServerConfig>, CertError> {
    server_config(issued.cert_pem.as_bytes(), issued.key_pem.as_bytes(), alpn)
}

/// The certificates of a PEM file's contents, in order; `what` names it in the errors
/// ("the CA file"). Empty or not PEM is an error.
pub fn parse_certificates(
    pem: &[u8],
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, e))?;
    if certs.is_empty() {
        return Err(CertError::Pem {
            path: what.into(),
            message: "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        });
    }
    Ok(certs)
}

/// A rustls client configuration builder over [`provider`], allowing `versions` (`None`:
/// TLS 1.2 and 1.3) and trusting as `trust` says (see [`Verifier`]); the caller adds a client
/// certificate or none.
pub fn client_builder(
    trust: &Trust,
    versions: Option<&[&'static rustls::SupportedProtocolVersion]>,
) -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>, CertError>
{
    let verifier = Verifier::new(trust)?;
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions.unwrap_or(rustls::DEFAULT_VERSIONS))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier)))
}

/// A rustls client configuration trusting as `trust` says, offering `alpn`, without a
/// client certificate. Session resumption is rustls's default: an in-memory cache of this
/// configuration, so connections made with one configuration resume each other's sessions.
pub fn client_config_for(
    trust: &Trust,
    alpn: &[&[u8]],
    versions: Option<&[&'static rustls::SupportedProtocolVersion]>,
) -> Result<Arc<rustls::ClientConfig>, CertError> {
    let mut config = client_builder(trust, versions)?.with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// [`client_config_for`] trusting only the CA certificates in `ca_pem` ([`Trust::Cacert`]:
/// and a server presenting one of them as its own).
pub fn client_config(
    ca_pem: &[u8],
    alpn: &[&[u8]],
    versions: Option<&[&'static rustls::SupportedProtocolVersion]>,
) -> Result<Arc<rustls::ClientConfig>, CertError> {
    let certs = parse_certificates(ca_pem, "the CA file")?;
    client_config_for(&Trust::Cacert(certs), alpn, versions)
}

/// Reads a PEM file, naming it in the error.
pub fn read_pem(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Io {
        context: format!("cannot read {}", path.display()),
        source,
    })
}

fn pem_error(what: &str, e: rustls::pki_types::pem::Error) -> CertError {
    CertError::Pem {
        path: what.into(),
        message: format!("is not PEM this needs ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_exist_while_the_dir_lives_and_are_gone_after() {
        let certs = CertDir::create(&["169.254.10.2".parse().unwrap()]).unwrap();
        let (cert, key, ca) = (certs.cert_path(), certs.key_path(), certs.ca_path());
        let key_text = std::fs::read_to_string(&key).unwrap();
        assert!(
            key_text.starts_with("-----BEGIN PRIVATE KEY-----"),
            "PKCS#8"
        );
        assert!(std::fs::read_to_string(&cert)
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----"));
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Both configurations accept what was written.
        server_config(
            &std::fs::read(&cert).unwrap(),
            key_text.as_bytes(),
            &[b"http/1.1"],
        )
        .unwrap();
        client_config(&std::fs::read(&ca).unwrap(), &[b"http/1.1"], None).unwrap();
        let dir = certs.path().to_path_buf();
        drop(certs);
        assert!(!dir.exists(), "the temporary directory is removed on drop");
    }

    #[test]
    fn a_client_trusting_the_ca_accepts_the_certificate_for_each_loopback_name() {
        let authority = Authority::new("test CA").unwrap();
        let issued = authority.issue_loopback(&[]).unwrap();
        let server = server_config_for(&issued, &[b"http/1.1"]).unwrap();
        let client = client_config(authority.pem().as_bytes(), &[b"http/1.1"], None).unwrap();
        for name in LOOPBACK_NAMES {
            let name = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
            let mut c = rustls::ClientConnection::new(client.clone(), name).unwrap();
            let mut s = rustls::ServerConnection::new(server.clone()).unwrap();
            handshake(&mut c, &mut s).unwrap();
            assert_eq!(
                c.peer_certificates().unwrap()[0].as_ref(),
                issued.cert_der.as_ref()
            );
        }
        // Another CA's client refuses it.
        let other = Authority::new("other CA").unwrap();
        let stranger = client_config(other.pem().as_bytes(), &[b"http/1.1"], None).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut c = rustls::ClientConnection::new(stranger, name).unwrap();
        let mut s = rustls::ServerConnection::new(server).unwrap();
        assert!(handshake(&mut c, &mut s).is_err());
    }

    /// Drives both ends in memory until neither has anything to send.
    fn handshake(
        c: &mut rustls::ClientConnection,
        s: &mut rustls::ServerConnection,
    ) -> Result<(), rustls::Error> {
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
        Ok(())
    }
}
