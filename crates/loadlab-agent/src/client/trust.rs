//! How the client trusts the agent and proves itself to it: the token read from its file,
//! and the TLS configuration that trusts the agent's certificate by its SHA-256 fingerprint
//! (or by a CA file), never by nothing.

use super::{AgentEndpoint, ClientError, Result};
use crate::protocol;
use loadlab_certs::Trust;
use std::sync::Arc;

pub(super) fn read_token(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ClientError::Invalid(format!(
            "--agent-token-file {}: {e}; copy the token file the agent printed at start to this \
             host (mode 0600)",
            path.display()
        ))
    })?;
    protocol::parse_token(&text)
        .map(str::to_string)
        .map_err(|why| {
            ClientError::Invalid(format!(
                "--agent-token-file {}: {why} (copy the agent's token file)",
                path.display()
            ))
        })
}

pub(super) fn tls_config(endpoint: &AgentEndpoint) -> Result<Arc<rustls::ClientConfig>> {
    let trust =
        match (&endpoint.fingerprint, &endpoint.cacert) {
            (Some(fp), None) => Trust::Fingerprint {
                sha256: protocol::parse_fingerprint(fp).map_err(|e| {
                    ClientError::Invalid(format!(
                        "--agent-fingerprint {fp}: {e}; give the sha256:... line the agent printed"
                    ))
                })?,
                flag: "--agent-fingerprint",
            },
            (None, Some(path)) => {
                let invalid = |e: &dyn std::fmt::Display| {
                    ClientError::Invalid(format!("--agent-cacert {}: {e}", path.display()))
                };
                let pem = std::fs::read(path).map_err(|e| invalid(&e))?;
                Trust::Cacert(
                    loadlab_certs::parse_certificates(&pem, "the file").map_err(|e| invalid(&e))?,
                )
            }
            (Some(_), Some(_)) => return Err(ClientError::Invalid(
                "--agent-fingerprint and --agent-cacert both say how to trust the agent: give one"
                    .into(),
            )),
            (None, None) => {
                return Err(ClientError::Invalid(format!(
                    "--agent {}: say how to trust the agent's certificate: --agent-fingerprint \
                 sha256:... (the agent printed it at start) or --agent-cacert FILE",
                    endpoint.url
                )))
            }
        };
    // The one verifier loadlab has (loadlab_certs::Verifier): the pin, or webpki over the CA
    // file plus the agent's own self-signed certificate given as that file.
    loadlab_certs::client_config_for(&trust, &[], None)
        .map_err(|e| ClientError::Invalid(format!("TLS: {e}")))
}
