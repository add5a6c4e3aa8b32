//! `Alt-Svc` (RFC 7838): how a server over HTTPS says where else it can be reached, HTTP/3
//! among the choices (`Alt-Svc: h3=":443"; ma=86400`). A run over HTTP/1.1 or HTTP/2 looks at
//! the header on each connection's first response (the engine's watch, never the hot path)
//! and, when the server offers `h3`, the result says so with the command to load it over
//! QUIC.
//!
//! The grammar (RFC 7838 section 3):
//!
//! ```text
//! Alt-Svc       = clear / 1#alt-value
//! clear         = %s"clear"
//! alt-value     = alternative *( OWS ";" OWS parameter )
//! alternative   = protocol-id "=" alt-authority
//! protocol-id   = token              ; percent-encoded ALPN name
//! alt-authority = quoted-string      ; [ uri-host ] ":" port
//! parameter     = token "=" ( token / quoted-string )
//! ```
//!
//! Pure: no I/O. It must not accept a header it cannot read whole (an unterminated quote, a
//! port out of range): a misread alternative would send the user to the wrong port.

use loadlab_result::AltSvcH3;

/// What one `Alt-Svc` field value says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AltSvc {
    /// `clear`: forget every alternative this origin advertised before.
    Clear,
    /// Alternatives, in the server's order of preference.
    Alternatives(Vec<Alternative>),
}

/// One alternative service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// The ALPN protocol name, percent-decoded (`h3`, `h2`, `h3-29`).
    pub protocol: String,
    /// Another host, when the authority names one; `None`: the origin's own host.
    pub host: Option<String>,
    pub port: u16,
    /// `ma`: how long the client may keep it, seconds (86,400 when not given).
    pub max_age_s: u64,
    /// `persist=1`: kept across network changes.
    pub persist: bool,
}

/// `ma` when the header gives none (RFC 7838 3.1).
pub const DEFAULT_MAX_AGE_S: u64 = 86_400;

impl AltSvc {
    /// The first HTTP/3 alternative (protocol `h3`: drafts such as `h3-29` are not HTTP/3 as
    /// loadlab speaks it).
    pub fn h3(&self) -> Option<&Alternative> {
        match self {
            AltSvc::Clear => None,
            AltSvc::Alternatives(all) => all.iter().find(|a| a.protocol == "h3"),
        }
    }
}

/// Parses one field value (several `Alt-Svc` lines joined with `, ` are one value).
pub fn parse(value: &str) -> Result<AltSvc, String> {
    let mut p = Parser {
        s: value.as_bytes(),
        at: 0,
    };
    p.ows();
    if p.rest() == b"clear" {
        return Ok(AltSvc::Clear);
    }
    let mut all = Vec::new();
    loop {
        p.ows();
        // Empty list elements (`a, , b`) are allowed by the list rule (RFC 9110 5.6.1).
        if p.eat(b',') {
            continue;
        }
        if p.done() {
            break;
        }
        all.push(p.alt_value()?);
        p.ows();
        if !p.done() && !p.eat(b',') {
            return Err(format!("expected `,` at byte {}", p.at));
        }
    }
    if all.is_empty() {
        return Err("no alternative".into());
    }
    Ok(AltSvc::Alternatives(all))
}

/// What a run's result says of the server's `header` when it offers HTTP/3: the offer, and
/// a note with the command that loads it over QUIC (the URL's port changed to the
/// alternative's when they differ). `None` when it offers no `h3` or cannot be read.
pub fn offer(url: &crate::config::TargetUrl, header: &str) -> Option<(AltSvcH3, String)> {
    let parsed = parse(header).ok()?;
    let h3 = parsed.h3()?;
    let host = if url.host.contains(':') {
        format!("[{}]", url.host)
    } else {
        url.host.clone()
    };
    let authority = if h3.port == 443 {
        host
    } else {
        format!("{host}:{}", h3.port)
    };
    let command = format!(
        "loadlab run --http3 https://{authority}{}",
        url.path_and_query
    );
    let port = if h3.port == url.port {
        String::new()
    } else {
        format!(" on UDP port {} (not {})", h3.port, url.port)
    };
    let elsewhere = match &h3.host {
        Some(other) if other.trim_start_matches('[').trim_end_matches(']') != url.host => format!(
            "; it names another host, {other}: point the URL's host at that address (its \
             certificate is the URL's host's)"
        ),
        _ => String::new(),
    };
    let note = format!(
        "the server advertises HTTP/3{port} (Alt-Svc: {header}): load it over QUIC with \
         `{command}` and this run's other flags{elsewhere}"
    );
    Some((
        AltSvcH3 {
            header: header.to_string(),
            host: h3.host.clone(),
            port: h3.port,
            max_age_s: h3.max_age_s,
        },
        note,
    ))
}

/// Every `Alt-Svc` field of a header map, joined as one value (RFC 9110 5.3).
pub fn joined<'a>(values: impl Iterator<Item = &'a [u8]>) -> Option<String> {
    let mut out: Option<String> = None;
    for v in values {
        let v = String::from_utf8_lossy(v);
        match &mut out {
            Some(all) => {
                all.push_str(", ");
                all.push_str(&v);
            }
            None => out = Some(v.into_owned()),
        }
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.at >= self.s.len()
    }

    fn rest(&self) -> &[u8] {
        self.s[self.at..].trim_ascii_end()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.at += usize::from(hit);
        hit
    }

    fn ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// RFC 9110's `token`: one or more tchar.
    fn token(&mut self) -> Result<&str, String> {
        let from = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        if self.at == from {
            return Err(format!("expected a token at byte {from}"));
        }
        // tchar is ASCII.
        Ok(std::str::from_utf8(&self.s[from..self.at]).unwrap_or_default())
    }

    /// RFC 9110's `quoted-string`, unescaped.
    fn quoted(&mut self) -> Result<String, String> {
        let from = self.at;
        if !self.eat(b'"') {
            return Err(format!("expected a quoted string at byte {from}"));
        }
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(format!("unterminated quoted string from byte {from}")),
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => {
                    let Some(&c) = self.s.get(self.at + 1) else {
                        return Err(format!("unterminated quoted string from byte {from}"));
                    };
                    out.push(c);
                    self.at += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| format!("a quoted string at byte {from} is not UTF-8"))
    }

    fn alt_value(&mut self) -> Result<Alternative, String> {
        let protocol = percent_decode(self.token()?)?;
        if !self.eat(b'=') {
            return Err(format!("expected `=` after `{protocol}`"));
        }
        let (host, port) = authority(&self.quoted()?)?;
        let mut alt = Alternative {
            protocol,
            host,
            port,
            max_age_s: DEFAULT_MAX_AGE_S,
            persist: false,
        };
        loop {
            self.ows();
            if !self.eat(b';') {
                return Ok(alt);
            }
            self.ows();
            let name = self.token()?.to_ascii_lowercase();
            if !self.eat(b'=') {
                return Err(format!("expected `=` after parameter `{name}`"));
            }
            let value = if self.peek() == Some(b'"') {
                self.quoted()?
            } else {
                self.token()?.to_string()
            };
            match name.as_str() {
                "ma" => {
                    alt.max_age_s = value
                        .parse()
                        .map_err(|_| format!("ma={value} is not a number of seconds"))?
                }
                "persist" => alt.persist = value == "1",
                // Unknown parameters are ignored (RFC 7838 3).
                _ => {}
            }
        }
    }
}

fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// `[uri-host] ":" port`; an IPv6 host keeps its brackets.
fn authority(text: &str) -> Result<(Option<String>, u16), String> {
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("alt-authority \"{text}\" has no port"))?;
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(format!(
            "alt-authority \"{text}\": an IPv6 host needs brackets"
        ));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("alt-authority \"{text}\": bad port"))?;
    if port == 0 {
        return Err(format!("alt-authority \"{text}\": port 0"));
    }
    Ok(((!host.is_empty()).then(|| host.to_string()), port))
}

fn percent_decode(token: &str) -> Result<String, String> {
    let b = token.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in `{token}`"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{token}` is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(protocol: &str, host: Option<&str>, port: u16, max_age_s: u64) -> Alternative {
        Alternative {
            protocol: protocol.into(),
            host: host.map(String::from),
            port,
            max_age_s,
            persist: false,
        }
    }

    #[test]
    fn alternatives_as_servers_send_them() {
        let cases: Vec<(&str, Vec<Alternative>)> = vec![
            // Caddy, nginx, Cloudflare.
            (
                r#"h3=":443"; ma=2592000"#,
                vec![alt("h3", None, 443, 2_592_000)],
            ),
            (
                r#"h3=":8443"; ma=86400, h3-29=":8443"; ma=86400"#,
                vec![
                    alt("h3", None, 8443, 86_400),
                    alt("h3-29", None, 8443, 86_400),
                ],
            ),
            // No ma: a day.
            (
                r#"h2="alt.example.com:443""#,
                vec![alt("h2", Some("alt.example.com"), 443, 86_400)],
            ),
            // Whitespace, an empty element, an unknown parameter, a quoted ma, persist.
            (
                "  h2=\":443\" ;ma=\"60\" ; foo=bar ,, h3=\"[::1]:4433\";persist=1  ",
                vec![
                    alt("h2", None, 443, 60),
                    Alternative {
                        persist: true,
                        ..alt("h3", Some("[::1]"), 4433, 86_400)
                    },
                ],
            ),
            // A percent-encoded protocol id and an escaped quote-free authority.
            (r#"w%3Dx%3Ay=":80""#, vec![alt("w=x:y", None, 80, 86_400)]),
            (r#"h3="\:4\43""#, vec![alt("h3", None, 443, 86_400)]),
        ];
        for (header, want) in cases {
            assert_eq!(parse(header), Ok(AltSvc::Alternatives(want)), "{header}");
        }
    }

    #[test]
    fn clear_and_the_h3_entry() {
        assert_eq!(parse("clear"), Ok(AltSvc::Clear));
        assert_eq!(parse(" clear "), Ok(AltSvc::Clear));
        assert_eq!(AltSvc::Clear.h3(), None);
        // `clear` is case-sensitive: `Clear` is a protocol id without an authority.
        assert!(parse("Clear").is_err());
        let h = parse(r#"h3-29=":443", h2=":443", h3=":8443""#).unwrap();
        assert_eq!(h.h3().map(|a| a.port), Some(8443));
        assert_eq!(parse(r#"h3-29=":443""#).unwrap().h3(), None);
    }

    #[test]
    fn malformed_headers_are_refused() {
        for bad in [
            "",
            " , ",
            "h3",
            "h3=:443",
            r#"h3=":443"#,
            r#"h3="443""#,
            r#"h3=":0""#,
            r#"h3=":65536""#,
            r#"h3="::1:443""#,
            r#"h3=":443"; ma=soon"#,
            r#"h3=":443"; ma"#,
            r#"h3=":443" h2=":443""#,
            r#"h%ZZ=":443""#,
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed as {:?}", parse(bad));
        }
    }

    #[test]
    fn fields_join() {
        let fields: [&[u8]; 2] = [br#"h2=":443""#, br#"h3=":443""#];
        assert_eq!(
            joined(fields.into_iter()).as_deref(),
            Some(r#"h2=":443", h3=":443""#)
        );
        assert_eq!(joined(std::iter::empty()), None);
    }

    fn url(host: &str, port: u16, path: &str) -> crate::config::TargetUrl {
        crate::config::TargetUrl {
            original: format!("https://{host}:{port}{path}"),
            host: host.into(),
            port,
            authority: format!("{host}:{port}"),
            path_and_query: path.into(),
            https: true,
        }
    }

    #[test]
    fn the_offer_says_how_to_load_it() {
        let (h3, note) = offer(&url("example.com", 443, "/a?b=1"), r#"h3=":443"; ma=3600"#)
            .expect("an h3 offer");
        assert_eq!(
            h3,
            AltSvcH3 {
                header: r#"h3=":443"; ma=3600"#.into(),
                host: None,
                port: 443,
                max_age_s: 3600,
            }
        );
        assert_eq!(
            note,
            r#"the server advertises HTTP/3 (Alt-Svc: h3=":443"; ma=3600): load it over QUIC with `loadlab run --http3 https://example.com/a?b=1` and this run's other flags"#
        );
        // Another port: the command names it.
        let (_, note) = offer(&url("127.0.0.1", 8443, "/"), r#"h2=":8443", h3=":9443""#).unwrap();
        assert!(
            note.starts_with("the server advertises HTTP/3 on UDP port 9443 (not 8443)"),
            "{note}"
        );
        assert!(
            note.contains("`loadlab run --http3 https://127.0.0.1:9443/`"),
            "{note}"
        );
        // Another host: said, with what to do.
        let (h3, note) =
            offer(&url("example.com", 443, "/"), r#"h3="alt.example.net:443""#).unwrap();
        assert_eq!(h3.host.as_deref(), Some("alt.example.net"));
        assert!(
            note.contains("it names another host, alt.example.net"),
            "{note}"
        );
        // An IPv6 URL keeps its brackets.
        let (_, note) = offer(&url("::1", 8443, "/"), r#"h3=":8443""#).unwrap();
        assert!(note.contains("https://[::1]:8443/"), "{note}");
        // No h3, clear, or unreadable: nothing to say.
        for header in [r#"h2=":443""#, "clear", r#"h3=":443"#] {
            assert_eq!(
                offer(&url("example.com", 443, "/"), header),
                None,
                "{header}"
            );
        }
    }
}
