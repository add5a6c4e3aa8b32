//! Encodes the run's requests once, before the run: one per path of the rotation. Every send
//! writes bytes made here, so the hot path never formats anything.

use crate::config::RunConfig;

/// The request as it goes on the wire, plus what the response parser must know about it.
#[derive(Debug, Clone)]
pub struct EncodedRequest {
    pub bytes: Vec<u8>,
    /// A response to HEAD has no body whatever its headers say.
    pub is_head: bool,
    /// Where the body starts when the request asks `Expect: 100-continue` and has one: the
    /// head goes first, the body only after the server's 100 (see [`expect_continue_at`]).
    pub body_at: Option<usize>,
}

/// One encoded request per path of the rotation, in order.
pub fn encode_all(config: &RunConfig) -> Vec<EncodedRequest> {
    config
        .paths
        .iter()
        .map(|path| encode_path(config, path))
        .collect()
}

/// The request for the URL's own path.
pub fn encode(config: &RunConfig) -> EncodedRequest {
    encode_path(config, &config.url.path_and_query)
}

fn encode_path(config: &RunConfig, path_and_query: &str) -> EncodedRequest {
    let mut out = Vec::with_capacity(256 + config.body.len());
    let has = |name: &str| {
        config
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    out.extend_from_slice(config.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path_and_query.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut header = |name: &str, value: &str| {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    if !has("host") {
        header("Host", &config.url.authority);
    }
    if !has("user-agent") {
        header("User-Agent", concat!("loadlab/", env!("CARGO_PKG_VERSION")));
    }
    if !has("accept") {
        header("Accept", "*/*");
    }
    if !config.keepalive && !has("connection") {
        // The server closes first, so TIME_WAIT lands on its side, not on our ephemeral ports.
        header("Connection", "close");
    }
    for (name, value) in &config.headers {
        header(name, value);
    }
    if !config.body.is_empty() && !has("content-length") && !has("transfer-encoding") {
        header("Content-Length", &config.body.len().to_string());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&config.body);
    EncodedRequest {
        body_at: expect_continue_at(&out),
        bytes: out,
        is_head: config.method.eq_ignore_ascii_case("HEAD"),
    }
}

/// Where the body of an encoded request starts, when its head carries `Expect: 100-continue`
/// (RFC 9110 10.1.1) and a body follows; `None` otherwise (the request goes in one write).
pub fn expect_continue_at(request: &[u8]) -> Option<usize> {
    let head_len = request.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    if head_len == request.len() {
        return None;
    }
    let expects = request[..head_len]
        .split(|&b| b == b'\n')
        .skip(1)
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            Some((&line[..colon], &line[colon + 1..]))
        })
        .any(|(name, value)| {
            name.trim_ascii().eq_ignore_ascii_case(b"expect")
                && value.trim_ascii().eq_ignore_ascii_case(b"100-continue")
        });
    expects.then_some(head_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunSpec;

    #[test]
    fn encodes_defaults_user_headers_and_body() {
        let config = RunSpec {
            url: "http://127.0.0.1:8080/echo?x=1".into(),
            method: "POST".into(),
            headers: vec!["X-Test: yes".into(), "Accept: text/plain".into()],
            body: b"hello".to_vec(),
            keepalive: false,
            ..RunSpec::default()
        }
        .validate()
        .unwrap();
        let req = encode(&config);
        let text = String::from_utf8(req.bytes).unwrap();
        assert_eq!(
            text,
            format!(
                "POST /echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadlab/{}\r\n\
                 Connection: close\r\nX-Test: yes\r\nAccept: text/plain\r\nContent-Length: 5\r\n\r\nhello",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert!(!req.is_head);
        assert_eq!(req.body_at, None);
    }

    #[test]
    fn expect_100_continue_splits_head_from_body() {
        let spec = |headers: Vec<String>, body: &[u8]| {
            RunSpec {
                url: "http://127.0.0.1:8080/up".into(),
                method: "POST".into(),
                headers,
                body: body.to_vec(),
                ..RunSpec::default()
            }
            .validate()
            .unwrap()
        };
        let req = encode(&spec(vec!["expect:  100-Continue ".into()], b"hello"));
        let at = req.body_at.expect("split");
        assert!(req.bytes[..at].ends_with(b"Content-Length: 5\r\n\r\n"));
        assert_eq!(&req.bytes[at..], b"hello");
        // No body: nothing to hold back. No header: one write.
        assert_eq!(
            encode(&spec(vec!["Expect: 100-continue".into()], b"")).body_at,
            None
        );
        assert_eq!(
            encode(&spec(vec!["X-Expect: 100-continue".into()], b"x")).body_at,
            None
        );
        assert_eq!(encode(&spec(vec![], b"hello")).body_at, None);
    }
}
