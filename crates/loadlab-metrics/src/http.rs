//! A small blocking HTTP/1.1 client for scraping and sending: one request per connection
//! (`Connection: close`), every step bounded by a timeout, Content-Length or chunked bodies.
//! Plain `http://` only; it must not be used on the load's hot path.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url:?} is not a plain http:// URL with a host; use http://HOST:PORT/PATH (TLS endpoints are not supported yet)")]
    BadUrl { url: String },
    #[error("{url}: {what}: {source}; check that the endpoint is up and reachable")]
    Io {
        url: String,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{url}: timed out after {timeout_ms} ms; raise the timeout or check the endpoint")]
    Timeout { url: String, timeout_ms: u128 },
    #[error(
        "{url}: the response is not HTTP/1.x ({problem}); check the URL points at an HTTP endpoint"
    )]
    BadResponse { url: String, problem: String },
}

/// A parsed `http://host:port/path?query`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpUrl {
    pub host_port: String,
    pub path: String,
}

impl HttpUrl {
    pub fn parse(url: &str) -> Result<HttpUrl, HttpError> {
        let bad = || HttpError::BadUrl {
            url: url.to_string(),
        };
        let rest = url.strip_prefix("http://").ok_or_else(bad)?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if host.is_empty() {
            return Err(bad());
        }
        let host_port = if host
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            host.to_string()
        } else {
            format!("{host}:80")
        };
        Ok(HttpUrl {
            host_port,
            path: path.to_string(),
        })
    }
}

pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// One request; the whole exchange (connect, send, read) must fit in `timeout`.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<Response, HttpError> {
    let parsed = HttpUrl::parse(url)?;
    let deadline = Instant::now() + timeout;
    let io = |what: &'static str| {
        move |source: std::io::Error| {
            if matches!(
                source.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                HttpError::Timeout {
                    url: url.to_string(),
                    timeout_ms: timeout.as_millis(),
                }
            } else {
                HttpError::Io {
                    url: url.to_string(),
                    what,
                    source,
                }
            }
        }
    };
    let addr = parsed
        .host_port
        .to_socket_addrs()
        .map_err(io("resolving the host"))?
        .next()
        .ok_or_else(|| HttpError::BadUrl {
            url: url.to_string(),
        })?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(io("connecting"))?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(io("setting a timeout"))?;
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: loadlab\r\nContent-Length: {}\r\n",
        parsed.path,
        parsed.host_port,
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(io("sending"))?;
    stream.write_all(body).map_err(io("sending"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io("reading")(std::io::ErrorKind::TimedOut.into()));
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(io("setting a timeout"))?;
        match stream.read(&mut buf).map_err(io("reading"))? {
            0 => break,
            n => raw.extend_from_slice(&buf[..n]),
        }
    }
    parse_response(&raw).map_err(|problem| HttpError::BadResponse {
        url: url.to_string(),
        problem,
    })
}

pub fn get(url: &str, timeout: Duration) -> Result<Response, HttpError> {
    request("GET", url, &[], &[], timeout)
}

fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|s| s.get(2..5))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("status line {status_line:?}"))?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let rest = &raw[head_end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line is cut")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("chunk size {size_text:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or("a chunk is cut")?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

/// Percent-encodes a query parameter's value.
pub fn encode_query_value(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_bodies_and_chunks() {
        let u = HttpUrl::parse("http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(u.host_port, "127.0.0.1:9090");
        assert_eq!(u.path, "/api/v1/write");
        assert_eq!(HttpUrl::parse("http://h").unwrap().host_port, "h:80");
        assert!(HttpUrl::parse("https://h/").is_err());
        let r = parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abcde"[..]));
        assert_eq!(encode_query_value("a b{c=\"d\"}"), "a%20b%7Bc%3D%22d%22%7D");
    }
}
