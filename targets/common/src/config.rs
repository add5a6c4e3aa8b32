//! The environment a target reads at startup, validated once. A bad value is reported with
//! the variable's name and the fix; targets print it and exit with status 2 instead of
//! panicking.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// Everything a target needs to know before it binds.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to bind; `127.0.0.1` unless `HOST` says otherwise, so a lab run never
    /// exposes a target beyond loopback by accident.
    pub host: IpAddr,
    /// Port to bind; 0 asks the OS for a free one (the bound address is printed).
    pub port: u16,
    /// Worker threads (or the framework's workers); defaults to the available cores.
    pub workers: usize,
    /// Listen backlog; an explicit experiment dimension (post 002 showed it decides results).
    pub backlog: u32,
    /// Base URL of the upstream `/upstream` calls; `None` makes `/upstream` answer 503.
    pub upstream_url: Option<String>,
    /// `http://HOST:PORT` of the gRPC upstream `/upstream-grpc` calls; `None` makes it 503.
    pub upstream_grpc_url: Option<String>,
    /// `UPSTREAM_CA`: the CA file an `https://` upstream's certificate chains to (in place of
    /// the system's roots).
    pub upstream_ca: Option<PathBuf>,
    /// `TLS_CERT` and `TLS_KEY`: serve HTTPS only, with this certificate chain and key.
    pub tls: Option<TlsFiles>,
    /// Where `templates/`, `posts/` and `VERSION` live.
    pub content_dir: PathBuf,
}

/// The PEM files a target serves HTTPS with.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// `TLS_CERT`: the certificate chain.
    pub cert: PathBuf,
    /// `TLS_KEY`: its PKCS#8 private key.
    pub key: PathBuf,
}

/// A variable that could not be used, with the fix.
#[derive(Debug)]
pub struct ConfigError {
    pub var: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{} is not set: set it to {}", self.var, self.expected)
        } else {
            write!(
                f,
                "{}={:?} is not valid: set it to {}",
                self.var, self.value, self.expected
            )
        }
    }
}

impl std::error::Error for ConfigError {}

/// Default listen backlog when `BACKLOG` is unset.
pub const DEFAULT_BACKLOG: u32 = 1024;

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads variables through `lookup`, so tests need not touch the process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let host = parse(&lookup, "HOST", "an IP address such as 127.0.0.1")?
            .unwrap_or(IpAddr::from([127, 0, 0, 1]));
        let port = parse(
            &lookup,
            "PORT",
            "a port number from 0 to 65535 (0 picks a free one)",
        )?
        .unwrap_or(0);
        let workers = match parse::<usize>(&lookup, "WORKERS", "a whole number of at least 1")? {
            Some(0) => {
                return Err(ConfigError {
                    var: "WORKERS",
                    value: "0".into(),
                    expected: "a whole number of at least 1",
                })
            }
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let backlog = match parse::<u32>(&lookup, "BACKLOG", "a whole number of at least 1")? {
            Some(0) => {
                return Err(ConfigError {
                    var: "BACKLOG",
                    value: "0".into(),
                    expected: "a whole number of at least 1",
                })
            }
            Some(n) => n,
            None => DEFAULT_BACKLOG,
        };
        let upstream_url = lookup("UPSTREAM_URL").filter(|v| !v.is_empty());
        if let Some(url) = &upstream_url {
            let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
            if !scheme_ok || url.parse::<hyper::Uri>().is_err() {
                return Err(ConfigError {
                    var: "UPSTREAM_URL",
                    value: url.clone(),
                    expected: "an http:// or https:// URL such as http://127.0.0.1:9100/",
                });
            }
        }
        let upstream_grpc_url = lookup("UPSTREAM_GRPC_URL").filter(|v| !v.is_empty());
        if let Some(url) = &upstream_grpc_url {
            let has_authority = url
                .parse::<hyper::Uri>()
                .is_ok_and(|u| u.authority().is_some());
            if !url.starts_with("http://") || !has_authority {
                return Err(ConfigError {
                    var: "UPSTREAM_GRPC_URL",
                    value: url.clone(),
                    expected: "an http:// URL such as http://127.0.0.1:9100 (gRPC without TLS)",
                });
            }
        }
        let upstream_ca = lookup("UPSTREAM_CA")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let tls = match (
            lookup("TLS_CERT").filter(|v| !v.is_empty()),
            lookup("TLS_KEY").filter(|v| !v.is_empty()),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
            }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(ConfigError {
                    var: "TLS_KEY",
                    value: String::new(),
                    expected: "the PEM private key of the certificate in TLS_CERT (TLS_CERT and TLS_KEY go together: both for HTTPS, neither for plain HTTP)",
                })
            }
            (None, Some(_)) => {
                return Err(ConfigError {
                    var: "TLS_CERT",
                    value: String::new(),
                    expected: "the PEM certificate chain of the key in TLS_KEY (TLS_CERT and TLS_KEY go together: both for HTTPS, neither for plain HTTP)",
                })
            }
        };
        let content_dir = lookup("CONTENT_DIR")
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from("../content"), PathBuf::from);
        Ok(Config {
            host,
            port,
            workers,
            backlog,
            upstream_url,
            upstream_grpc_url,
            upstream_ca,
            tls,
            content_dir,
        })
    }

    /// The socket address to bind.
    pub fn bind_addr(&self) -> std::net::SocketAddr {
        (self.host, self.port).into()
    }
}

fn parse<T: std::str::FromStr>(
    lookup: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    expected: &'static str,
) -> Result<Option<T>, ConfigError> {
    match lookup(var).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(value) => value.trim().parse().map(Some).map_err(|_| ConfigError {
            var,
            value,
            expected,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn defaults_bind_loopback_on_a_free_port() {
        let c = Config::from_lookup(env(&[])).unwrap();
        assert_eq!(c.bind_addr().to_string(), "127.0.0.1:0");
        assert_eq!(c.backlog, DEFAULT_BACKLOG);
        assert!(c.workers >= 1);
        assert!(c.upstream_url.is_none());
    }

    #[test]
    fn bad_values_name_the_variable_and_the_fix() {
        let err = Config::from_lookup(env(&[("PORT", "http")])).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("PORT=\"http\" is not valid: set it to"));
        assert!(Config::from_lookup(env(&[("WORKERS", "0")])).is_err());
        assert!(Config::from_lookup(env(&[("UPSTREAM_URL", "ftp://x")])).is_err());
        let err = Config::from_lookup(env(&[("UPSTREAM_GRPC_URL", "127.0.0.1:9100")])).unwrap_err();
        assert_eq!(err.var, "UPSTREAM_GRPC_URL");
        let ok = Config::from_lookup(env(&[("UPSTREAM_GRPC_URL", "http://127.0.0.1:9100")]));
        assert_eq!(
            ok.unwrap().upstream_grpc_url.as_deref(),
            Some("http://127.0.0.1:9100")
        );
        assert!(Config::from_lookup(env(&[("UPSTREAM_URL", "https://127.0.0.1:1/")])).is_ok());
    }

    #[test]
    fn tls_needs_both_files_and_names_both_when_one_is_missing() {
        let both =
            Config::from_lookup(env(&[("TLS_CERT", "c.pem"), ("TLS_KEY", "k.pem")])).unwrap();
        assert!(both.tls.is_some());
        for half in [[("TLS_CERT", "c.pem")], [("TLS_KEY", "k.pem")]] {
            let message = Config::from_lookup(env(&half)).unwrap_err().to_string();
            assert!(
                message.contains("TLS_CERT") && message.contains("TLS_KEY"),
                "{message}"
            );
        }
    }
}
