//! Certificates made the way users make them, by the `openssl` command line (issue 27, item
//! 3): `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=NAME -addext subjectAltName=...`,
//! which OpenSSL marks `CA:TRUE`, and the same with a validity period in the past (through
//! `openssl ca -selfsign -startdate -enddate`, which OpenSSL 3.0's `req` cannot do).
//!
//! It must not use rcgen or loadlab's certificate crate: the point is OpenSSL's own output.
//! The `openssl` program is required (scripts/setup.sh installs it).

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A self-signed certificate and its key, PEM, made by the `openssl` program.
pub struct OpensslCert {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

/// A temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadlab-openssl-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).expect("scratch directory for openssl");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (install it: scripts/setup.sh)");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).expect("openssl's output file")
}

const CA_CONFIG: &str = "[ca]\ndefault_ca = selfsigned\n[selfsigned]\ndatabase = index.txt\n\
new_certs_dir = .\nrand_serial = yes\ndefault_md = sha256\npolicy = any\n\
copy_extensions = copy\nx509_extensions = ext\nunique_subject = no\n[any]\n\
commonName = supplied\n[ext]\nbasicConstraints = critical,CA:TRUE\n\
subjectKeyIdentifier = hash\n";

impl OpensslCert {
    /// `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=CN -addext subjectAltName=SAN`
    /// (`san` as `DNS:localhost,IP:127.0.0.1`), valid for a day from now.
    pub fn req_x509(cn: &str, san: &str) -> OpensslCert {
        let dir = Scratch::new();
        let (subj, san) = names(cn, san);
        openssl(
            &dir.0,
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", &subj, "-addext", &san,
                "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
            ],
        );
        OpensslCert {
            cert_pem: read(&dir.0, "cert.pem"),
            key_pem: read(&dir.0, "key.pem"),
        }
    }

    /// The same kind of certificate (CA:TRUE, self-signed) valid only in January 2020.
    pub fn expired(cn: &str, san: &str) -> OpensslCert {
        OpensslCert::valid_between(cn, san, "20200101000000Z", "20200201000000Z")
    }

    /// The same kind of certificate valid only from 2099 on (not valid yet).
    pub fn not_yet_valid(cn: &str, san: &str) -> OpensslCert {
        OpensslCert::valid_between(cn, san, "20990101000000Z", "20991231000000Z")
    }

    /// A CA made by `openssl req -x509`, and a leaf (CA:FALSE) it signed with `openssl x509
    /// -req -CA`: (the CA, the leaf).
    pub fn leaf_under_new_ca(cn: &str, san: &str) -> (OpensslCert, OpensslCert) {
        let dir = Scratch::new();
        let (subj, san) = names(cn, san);
        // Each CA its own name: two CAs of one name would make a chain check find the wrong
        // one and fail on its signature instead of on an unknown issuer.
        let ca_subj = format!(
            "/CN=loadlab test CA {}",
            dir.0.file_name().and_then(|n| n.to_str()).unwrap_or("")
        );
        openssl(
            &dir.0,
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", &ca_subj, "-keyout",
                "ca.key", "-out", "ca.pem", "-days", "1",
            ],
        );
        openssl(
            &dir.0,
            &[
                "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", &subj, "-keyout",
                "leaf.key", "-out", "leaf.csr",
            ],
        );
        std::fs::write(
            dir.0.join("leaf.ext"),
            format!("basicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\n{san}\n"),
        )
        .expect("write leaf.ext");
        openssl(
            &dir.0,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                "leaf.ext",
                "-out",
                "leaf.pem",
            ],
        );
        (
            OpensslCert {
                cert_pem: read(&dir.0, "ca.pem"),
                key_pem: read(&dir.0, "ca.key"),
            },
            OpensslCert {
                cert_pem: read(&dir.0, "leaf.pem"),
                key_pem: read(&dir.0, "leaf.key"),
            },
        )
    }

    /// A self-signed certificate (CA:TRUE) valid from `start` to `end` (`YYYYMMDDHHMMSSZ`).
    pub fn valid_between(cn: &str, san: &str, start: &str, end: &str) -> OpensslCert {
        let dir = Scratch::new();
        let (subj, san) = names(cn, san);
        std::fs::write(dir.0.join("ca.cnf"), CA_CONFIG).expect("write ca.cnf");
        std::fs::write(dir.0.join("index.txt"), "").expect("write index.txt");
        openssl(
            &dir.0,
            &[
                "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", &subj, "-addext", &san,
                "-keyout", "key.pem", "-out", "req.csr",
            ],
        );
        openssl(
            &dir.0,
            &[
                "ca",
                "-batch",
                "-notext",
                "-config",
                "ca.cnf",
                "-selfsign",
                "-keyfile",
                "key.pem",
                "-in",
                "req.csr",
                "-startdate",
                start,
                "-enddate",
                end,
                "-out",
                "cert.pem",
            ],
        );
        OpensslCert {
            cert_pem: read(&dir.0, "cert.pem"),
            key_pem: read(&dir.0, "key.pem"),
        }
    }

    /// A rustls server configuration presenting this certificate, offering `alpn`.
    pub fn server_config(&self, alpn: &[&[u8]]) -> Arc<rustls::ServerConfig> {
        let chain = CertificateDer::pem_slice_iter(&self.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .expect("openssl's certificate is PEM");
        let key = PrivateKeyDer::from_pem_slice(&self.key_pem).expect("openssl's key is PEM");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("openssl's certificate and key");
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

fn names(cn: &str, san: &str) -> (String, String) {
    (format!("/CN={cn}"), format!("subjectAltName={san}"))
}
