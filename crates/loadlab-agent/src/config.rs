//! The agent's validated configuration, its token and its clock, and its errors.
//!
//! It must not read files or flags: the CLI does, and hands over a checked [`AgentConfig`].

use crate::protocol::ServerRequest;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The bearer token. Kept only as its SHA-256 digest so that the comparison runs over a
/// fixed length (the token's length leaks nothing) and the token itself is never printed.
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl Token {
    pub fn new(secret: &str) -> Token {
        Token {
            digest: digest(secret.trim().as_bytes()),
        }
    }

    /// A new secret: 32 random bytes as 64 hexadecimal characters.
    pub fn generate_hex() -> Result<String, String> {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| "cannot read random bytes for a token from the system".to_string())?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Constant-time comparison of the digests.
    pub fn matches(&self, presented: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        self.digest.ct_eq(&digest(presented)).into()
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().try_into().unwrap_or([0; 32])
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The agent's clock: unix nanoseconds read once from the wall clock at start, then advanced
/// by the monotonic clock, so a wall-clock step cannot move samples; plus a test-only offset
/// added to every timestamp the agent reports.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor: Instant,
    anchor_unix_ns: i64,
    offset_ns: i64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        let anchor = Instant::now();
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            anchor,
            anchor_unix_ns: i64::try_from(unix.as_nanos()).unwrap_or(i64::MAX),
            offset_ns: 0,
        }
    }

    /// Shifts every timestamp by `offset_ms` (`--test-clock-offset-ms`): a test can then
    /// check the generator recovers the offset.
    pub fn with_offset_ms(mut self, offset_ms: i64) -> Clock {
        self.offset_ns = offset_ms.saturating_mul(1_000_000);
        self
    }

    /// Now, unix ns on this clock.
    pub fn now_ns(&self) -> i64 {
        self.at_ns(Instant::now())
    }

    /// `at`, unix ns on this clock.
    pub fn at_ns(&self, at: Instant) -> i64 {
        let since = match at.checked_duration_since(self.anchor) {
            Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            None => -i64::try_from((self.anchor - at).as_nanos()).unwrap_or(i64::MAX),
        };
        self.anchor_unix_ns
            .saturating_add(since)
            .saturating_add(self.offset_ns)
    }
}

/// [`AgentConfig::read_timeout`]'s default.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything the agent needs, checked.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Every request must carry it (`Authorization: Bearer`).
    pub token: Token,
    /// TLS always: there is no plaintext mode.
    pub tls: Arc<rustls::ServerConfig>,
    /// Whether a request may run a command line (`--allow-exec`): remote code execution by
    /// design, so off unless the person who started the agent said so.
    pub allow_exec: bool,
    /// The lab whose targets may be launched by name, chosen once at start and checked
    /// ([`crate::lab::choose`]): `None`, no launch by name (see `no_lab`).
    pub targets_dir: Option<PathBuf>,
    /// Why there is no lab, said to a launch by name when `targets_dir` is `None`.
    pub no_lab: String,
    /// What `ServerRequest::Default` means (`--pid/--cgroup/--port/--container`).
    pub default_server: Option<ServerRequest>,
    /// How long a session lives without a request.
    pub lease: Duration,
    pub clock: Clock,
    /// Connections served at once; beyond, the oldest unauthenticated one is dropped (or
    /// the new one when all are authenticated).
    pub max_connections: usize,
    /// The state directory (`--state-dir`), locked: nonces kept across restarts, and what
    /// the agent makes recorded before it is made. `None` (tests): memory only.
    pub state_dir: Option<Arc<crate::state_dir::StateDir>>,
    /// Whether it sends load for a coordinator (`--generator`): a token holder may then make
    /// this host send HTTP requests to any address it names. Off unless asked for.
    pub generator: bool,
    /// A request's headers (an idle connection's next request's too) or its body slower
    /// than this: the connection is closed, a body refused with 408. 10 s; tests that wait
    /// it out shorten it.
    pub read_timeout: Duration,
}

impl AgentConfig {
    /// The defaults: a 10 s lease, 256 connections, no exec, no default server.
    pub fn new(token: Token, tls: Arc<rustls::ServerConfig>) -> AgentConfig {
        AgentConfig {
            token,
            tls,
            allow_exec: false,
            targets_dir: None,
            no_lab: "this agent was started without a lab: restart it with --targets DIR".into(),
            default_server: None,
            lease: Duration::from_secs(10),
            clock: Clock::new(),
            max_connections: 256,
            state_dir: None,
            generator: false,
            read_timeout: READ_TIMEOUT,
        }
    }
}

/// What stops the agent itself (a request's failure is an HTTP answer, not this).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot accept connections: {0}; check the --listen address is this host's")]
    Accept(std::io::Error),
    #[error("cannot start the agent's runtime: {0}")]
    Runtime(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_redacted_and_compared_by_value() {
        let token = Token::new("s3cret\n");
        assert_eq!(format!("{token:?}"), "<redacted>");
        assert!(token.matches(b"s3cret"));
        assert!(!token.matches(b"s3cres"));
        assert!(!token.matches(b""));
    }

    #[test]
    fn the_clock_adds_its_offset_and_follows_the_monotonic_clock() {
        let clock = Clock::new();
        let shifted = clock.with_offset_ms(-250);
        let at = Instant::now();
        assert_eq!(clock.at_ns(at) - shifted.at_ns(at), 250_000_000);
        let later = at + Duration::from_millis(3);
        assert_eq!(clock.at_ns(later) - clock.at_ns(at), 3_000_000);
    }
}
