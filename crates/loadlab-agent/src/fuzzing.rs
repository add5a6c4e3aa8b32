//! The agent's request parsing as one function of bytes, for the libFuzzer target
//! `fuzz/fuzz_targets/agent_request.rs` (and its seeds): the admission headers (token,
//! protocol, nonce), the query numbers, and each endpoint's JSON body, as `handler` reads
//! them after the bytes have arrived. None of it may panic, whatever a client sends.
//!
//! It must not open sessions or touch the host: it parses and admits only.

use crate::protocol::{OpenSession, StartSampling};
use crate::state::State;
use hyper::header::HeaderValue;
use hyper::{HeaderMap, Method};

/// Parses `input` as the agent would a request: the first line is the method, the second
/// the query string, then `name: value` header lines up to an empty line, then the body.
pub fn parse_request(state_token: &str, input: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut parts = input.splitn(3, |b| *b == b'\n');
    let method = parts
        .next()
        .and_then(|m| Method::from_bytes(m).ok())
        .unwrap_or(Method::GET);
    let query = String::from_utf8_lossy(parts.next().unwrap_or(b"")).to_string();
    let rest = parts.next().unwrap_or(b"");
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &b""[..]),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name),
            HeaderValue::from_bytes(value.trim_ascii()),
        ) {
            headers.append(name, value);
        }
    }
    let config = crate::config::AgentConfig::new(crate::config::Token::new(state_token), tls());
    let state = State::new(config);
    out.push(format!(
        "admit: {:?}",
        state.admit(&method, &headers).map_err(|r| r.status)
    ));
    for name in ["after", "wait_ms", "port"] {
        out.push(format!(
            "{name}: {:?}",
            crate::handler::query_number(&query, name).map_err(|r| r.status)
        ));
    }
    out.push(format!(
        "open: {:?}",
        crate::handler::parse_json::<OpenSession>(body)
            .map(|o| o.server.describe())
            .map_err(|r| r.field)
    ));
    out.push(format!(
        "sampling: {:?}",
        crate::handler::parse_json::<StartSampling>(body)
            .map(|s| s.every_ms)
            .map_err(|r| r.field)
    ));
    if let Ok(open) = crate::handler::parse_json::<OpenSession>(body) {
        if let crate::protocol::ServerRequest::Target { launch, .. }
        | crate::protocol::ServerRequest::Exec { launch, .. } = &open.server
        {
            out.push(format!(
                "limits: {:?}",
                crate::launch::limits(launch)
                    .map(|_| ())
                    .map_err(|r| r.field)
            ));
            out.push(format!(
                "env: {:?}",
                crate::launch::check_env(&launch.env, |_, _| Ok(())).map_err(|r| r.field)
            ));
        }
    }
    out.push(format!(
        "token: {:?}",
        crate::protocol::parse_token(&String::from_utf8_lossy(body)).is_ok()
    ));
    out
}

/// One server configuration for every call (making a certificate per input would dominate
/// the fuzzer's time).
fn tls() -> std::sync::Arc<rustls::ServerConfig> {
    static TLS: std::sync::OnceLock<std::sync::Arc<rustls::ServerConfig>> =
        std::sync::OnceLock::new();
    TLS.get_or_init(|| {
        let ca = loadlab_certs::Authority::new("fuzz").expect("a CA");
        let issued = ca.issue_loopback(&[]).expect("a certificate");
        loadlab_certs::server_config_for(&issued, &[b"http/1.1"]).expect("a config")
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds in fuzz/seeds/agent-* parse, and a well-formed open is admitted.
    #[test]
    fn the_seeds_parse_without_panicking() {
        let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
        let mut seen = 0;
        for entry in std::fs::read_dir(seeds).unwrap().flatten() {
            if entry.file_name().to_string_lossy().starts_with("agent-") {
                let out = parse_request(
                    "0123456789abcdef0123456789abcdef",
                    &std::fs::read(entry.path()).unwrap(),
                );
                assert!(!out.is_empty());
                seen += 1;
            }
        }
        assert!(seen >= 2, "the agent's seeds are missing");
        let good = format!("POST\nport=80&after=3\nauthorization: Bearer 0123456789abcdef0123456789abcdef\nx-loadlab-agent-protocol: {}\nx-loadlab-nonce: 0123456789abcdef0123456789abcdef\n\n{{\"server\":{{\"kind\":\"pid\",\"pid\":1}},\"client\":\"c\"}}", crate::protocol::PROTOCOL);
        let out = parse_request("0123456789abcdef0123456789abcdef", good.as_bytes());
        assert_eq!(out[0], "admit: Ok(())");
        assert!(out.iter().any(|l| l == "port: Ok(Some(80))"), "{out:?}");
        assert!(out.iter().any(|l| l.contains("pid 1")), "{out:?}");
    }
}
