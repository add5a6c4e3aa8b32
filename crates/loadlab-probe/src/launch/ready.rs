//! How loadlab learns a server is up: the `listening on ADDR` line (and where that address is
//! reached from loadlab when the server runs in a network namespace), a blocking health check
//! over HTTP or HTTPS, and a free port to pass in `PORT`. No process handling here.

use super::NetnsEntry;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Parses `listening on 127.0.0.1:43121`; an unspecified IP becomes loopback.
pub fn parse_address_line(line: &str) -> Result<SocketAddr, String> {
    let addr = parse_bound(line)?;
    Ok(match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from(([127, 0, 0, 1], addr.port()))
        }
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
        _ => addr,
    })
}

/// Where loadlab reaches a server that announced `addr` inside `netns`: its loopback is the
/// namespace's own, out of loadlab's reach.
pub(super) fn in_netns(addr: SocketAddr, netns: &NetnsEntry) -> Result<SocketAddr, String> {
    if addr.ip().is_unspecified() {
        Ok(SocketAddr::new(netns.address, addr.port()))
    } else if addr.ip().is_loopback() {
        Err(format!(
            "it listens on {addr}, the loopback of its own network namespace, which loadlab \
             cannot reach; behind a shaped link the server must bind $HOST ({}) or 0.0.0.0",
            netns.address
        ))
    } else {
        Ok(addr)
    }
}

/// The address in `listening on ADDR`, as the server bound it.
pub(super) fn parse_bound(line: &str) -> Result<SocketAddr, String> {
    let line = line.trim();
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|rest| {
            rest.trim()
                .trim_start_matches("http://")
                .parse::<SocketAddr>()
                .ok()
        })
        .ok_or_else(|| {
            format!("its first stdout line should be `listening on ADDR:PORT`, got {line:?}")
        })?;
    Ok(addr)
}

/// `GET path` on `stream` (plain or TLS), then whether the status line says 2xx: its first
/// 10 bytes, `HTTP/1.x 2`.
fn get_is_2xx(
    mut stream: impl Read + Write,
    addr: SocketAddr,
    path: &str,
) -> std::io::Result<bool> {
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    stream.flush()?;
    let mut head = [0u8; 10];
    stream.read_exact(&mut head)?;
    Ok(head.starts_with(b"HTTP/1.") && head[9] == b'2')
}

/// One blocking `GET path`; true on a 2xx.
pub fn healthz(addr: SocketAddr, path: &str) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        get_is_2xx(stream, addr, path)
    };
    attempt().unwrap_or(false)
}

/// [`healthz`] over TLS: the server's certificate must be valid for its IP address under
/// `config`'s roots, so a server presenting the wrong certificate never counts as ready.
pub fn healthz_tls(addr: SocketAddr, path: &str, config: Arc<rustls::ClientConfig>) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.set_write_timeout(Some(Duration::from_secs(2)))?;
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let connection =
            rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
        get_is_2xx(rustls::StreamOwned::new(connection, stream), addr, path)
    };
    attempt().unwrap_or(false)
}

/// A free loopback port for a server loadlab starts with `PORT` set. (Another process could
/// take it before the server binds; the start-up then fails with the server's own message.)
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lines() {
        assert_eq!(
            parse_address_line("listening on 127.0.0.1:43121\n").unwrap(),
            "127.0.0.1:43121".parse().unwrap()
        );
        assert_eq!(
            parse_address_line("listening on 0.0.0.0:80").unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(
            parse_address_line("listening on [::1]:8080").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        assert!(parse_address_line("Server started").is_err());
    }
}
