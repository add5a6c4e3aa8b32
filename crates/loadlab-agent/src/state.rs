//! The agent's shared state: its configuration, the one session slot, and the nonces seen;
//! and the checks every request passes first (token, protocol version, nonce).
//!
//! Its only I/O is appending each accepted nonce to the state dir's log (a replay after a
//! restart is still a replay); handlers and the supervisor act on what it holds.

use crate::config::AgentConfig;
use crate::protocol::{Busy, HEADER_NONCE, HEADER_PROTOCOL, PROTOCOL};
use crate::reply::Refusal;
use crate::session::{lock, Session};
use hyper::{HeaderMap, Method, StatusCode};
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

/// Nonces remembered for replay protection; the oldest is forgotten beyond this.
pub(crate) const NONCES_KEPT: usize = 100_000;

/// The one session slot (sessions are one at a time).
pub(crate) enum Slot {
    Free,
    /// A session being opened (a launch can take seconds): others are busy-refused.
    Opening(Busy),
    Open(Arc<Session>),
    /// A session being stopped (up to the stop grace): others are busy-refused.
    Closing(Busy),
}

pub(crate) struct State {
    pub config: AgentConfig,
    pub slot: Mutex<Slot>,
    /// The load being sent in the generator role (one at a time), kept after it ends until
    /// its coordinator closes it or its lease runs out.
    pub load: Mutex<Option<Arc<crate::load::LoadRun>>>,
    /// One load body (up to 16 MiB) read at a time: concurrent starts are refused before
    /// their bodies are read.
    pub load_body: Arc<tokio::sync::Semaphore>,
    nonces: Mutex<Nonces>,
}

#[derive(Default)]
struct Nonces {
    seen: HashSet<[u8; 16]>,
    order: VecDeque<[u8; 16]>,
}

impl State {
    pub fn new(config: AgentConfig) -> State {
        let mut nonces = Nonces::default();
        if let Some(dir) = &config.state_dir {
            for nonce in dir.load_nonces(NONCES_KEPT) {
                if nonces.seen.insert(nonce) {
                    nonces.order.push_back(nonce);
                }
            }
        }
        State {
            config,
            slot: Mutex::new(Slot::Free),
            load: Mutex::default(),
            load_body: Arc::new(tokio::sync::Semaphore::new(1)),
            nonces: Mutex::new(nonces),
        }
    }

    /// Who holds the agent, if anyone.
    pub fn busy(&self) -> Option<Busy> {
        match &*lock(&self.slot) {
            Slot::Free => None,
            Slot::Opening(b) | Slot::Closing(b) => Some(b.clone()),
            Slot::Open(s) => Some(s.busy.clone()),
        }
    }

    /// The open session named `id`.
    pub fn session(&self, id: &str) -> Result<Arc<Session>, Refusal> {
        match &*lock(&self.slot) {
            Slot::Open(s) if s.id == id => Ok(s.clone()),
            _ => Err(Refusal::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no session {id} on this agent: it was closed or its lease ran out (renew \
                     it at least every lease_ms); open a new one"
                ),
            )),
        }
    }

    /// Token, then protocol version, then (POST and DELETE) a fresh nonce. Nothing else is
    /// looked at before the token matches.
    pub fn admit(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        let presented = headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        // Compare even when absent, so that a missing header takes the same time.
        let ok = self.config.token.matches(presented.unwrap_or(b""));
        if presented.is_none() || !ok {
            return Err(Refusal::unauthenticated());
        }
        check_protocol(headers)?;
        if matches!(
            *method,
            Method::POST | Method::DELETE | Method::PUT | Method::PATCH
        ) {
            let nonce = headers
                .get(HEADER_NONCE)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_nonce)
                .ok_or_else(|| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "a POST or DELETE needs a {HEADER_NONCE} header of 32 hexadecimal \
                             characters, new for each request"
                        ),
                    )
                })?;
            if !self.remember(nonce) {
                return Err(Refusal::new(
                    StatusCode::UNAUTHORIZED,
                    "replayed request: this nonce was used before; send each request with a \
                     new nonce",
                ));
            }
        }
        Ok(())
    }

    /// False when `nonce` was seen already.
    fn remember(&self, nonce: [u8; 16]) -> bool {
        let mut n = lock(&self.nonces);
        if !n.seen.insert(nonce) {
            return false;
        }
        n.order.push_back(nonce);
        if let Some(dir) = &self.config.state_dir {
            dir.append_nonce(&nonce);
        }
        if n.order.len() > NONCES_KEPT {
            if let Some(old) = n.order.pop_front() {
                n.seen.remove(&old);
            }
        }
        true
    }
}

fn check_protocol(headers: &HeaderMap) -> Result<(), Refusal> {
    let sent = headers
        .get(HEADER_PROTOCOL)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string());
    match sent.as_deref() {
        Some(v) if v == PROTOCOL.to_string() => Ok(()),
        Some(v) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!(
                "this agent speaks protocol {PROTOCOL}; the client sent {v}: use a loadlab of \
                 the same protocol on both hosts"
            ),
        )),
        None => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!(
                "this agent speaks protocol {PROTOCOL}; the client sent no {HEADER_PROTOCOL} \
                 header: use a loadlab of the same protocol on both hosts"
            ),
        )),
    }
}

/// 32 hexadecimal characters.
pub(crate) fn parse_nonce(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_32_hex_characters() {
        assert!(parse_nonce("0123456789abcdefABCDEF0123456789").is_some());
        assert!(parse_nonce("0123456789abcdef").is_none());
        assert!(parse_nonce("0123456789abcdefABCDEF012345678g").is_none());
        assert!(parse_nonce(&"é".repeat(16)).is_none());
    }

    #[test]
    fn seen_nonces_are_bounded_first_in_first_out() {
        let state = State::new(crate::config::AgentConfig::new(
            crate::config::Token::new("t"),
            test_tls(),
        ));
        let nonce = |i: u32| {
            let mut n = [0u8; 16];
            n[..4].copy_from_slice(&i.to_be_bytes());
            n
        };
        assert!(state.remember(nonce(0)));
        assert!(!state.remember(nonce(0)));
        for i in 1..=NONCES_KEPT as u32 {
            assert!(state.remember(nonce(i)));
        }
        // The first one has been forgotten; the last ones are still refused.
        assert!(state.remember(nonce(0)));
        assert!(!state.remember(nonce(NONCES_KEPT as u32)));
    }

    fn test_tls() -> Arc<rustls::ServerConfig> {
        let ca = loadlab_certs::Authority::new("test").unwrap();
        let issued = ca.issue_loopback(&[]).unwrap();
        loadlab_certs::server_config_for(&issued, &[b"http/1.1"]).unwrap()
    }
}
