//! How the client trusts the agent and proves itself to it: the token read from its file,
//! and the TLS configuration that trusts the agent's certificate by its SHA-256 fingerprint
//! (or by a CA file), never by nothing.

use super::{AgentEndpoint, ClientError, Result};
use crate::protocol;
use loadlab_certs::Trust;
use std::sync::Arc;

/// The most bytes a token file may hold: a token is a line of some 64 characters.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The token in `path`: a regular file of at most [`MAX_TOKEN_FILE_BYTES`] (`/dev/zero`
/// was read until memory ran out), owned by this user and readable by no one else, as the
/// agent holds its own token file (`state_dir::check_owner_and_mode`, the same check).
pub(super) fn read_token(path: &std::path::Path) -> Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let invalid = |why: String| {
        ClientError::Invalid(format!(
            "--agent-token-file {}: {why}; copy the token file the agent printed at start to \
             this host (mode 0600)",
            path.display()
        ))
    };
    // Non-blocking: a FIFO named here must be refused, not waited on for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| invalid(e.to_string()))?;
    let meta = file.metadata().map_err(|e| invalid(e.to_string()))?;
    if !meta.is_file() {
        return Err(invalid("not a regular file".into()));
    }
    crate::state_dir::check_owner_and_mode(path, "the agent's token file", true)
        .map_err(|e| ClientError::Invalid(format!("--agent-token-file: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| invalid(e.to_string()))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(invalid(format!(
            "longer than {MAX_TOKEN_FILE_BYTES} bytes, which no token is"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| invalid("not text".into()))?;
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

#[cfg(test)]
mod tests {
    use super::read_token;
    use std::os::unix::fs::PermissionsExt as _;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    /// A token file of `bytes` with `mode`, in a directory of its own.
    fn file(name: &str, bytes: &[u8], mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        (dir, path)
    }

    fn err(path: &std::path::Path) -> String {
        read_token(path).unwrap_err().to_string()
    }

    /// Issue 51: `token_file = "/dev/zero"` was read until memory ran out, and a token file
    /// others could read was taken without a word. A token file is a small regular file,
    /// private to its owner, as the agent holds its own.
    #[test]
    fn a_token_file_is_a_small_private_regular_file() {
        let (_d, good) = file("good", format!("{TOKEN}\n").as_bytes(), 0o600);
        assert_eq!(read_token(&good).unwrap(), TOKEN);
        let e = err(std::path::Path::new("/dev/zero"));
        assert!(e.contains("/dev/zero: not a regular file"), "{e}");
        // A long token is still a token by its characters: only the bound refuses it.
        let (_d, long) = file("long", TOKEN.repeat(200).as_bytes(), 0o600);
        let e = err(&long);
        assert!(e.contains("longer than 4096 bytes"), "{e}");
        let (_d, shared) = file("shared", format!("{TOKEN}\n").as_bytes(), 0o644);
        let e = err(&shared);
        assert!(
            e.contains("can be read by others (mode 644)") && e.contains("chmod 600"),
            "{e}"
        );
        // A FIFO is refused, not waited on for a writer.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path in a directory of this test.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(err(&fifo).contains("not a regular file"));
    }
}
