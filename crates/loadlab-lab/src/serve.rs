//! `lab serve NAME`: start a built target through the probe's launcher (the one launcher:
//! its own process group, a death signal from a long-lived thread, the `listening on ADDR`
//! line, `/healthz`). The [`ServedTarget`] owns the process and kills its process group when
//! dropped, so a failing test, a Ctrl-C or a killed loadlab never leaves a server behind.
//! With [`ServeTls`] the target serves HTTPS and its health is checked over TLS.
//! Synchronous on purpose: usable from any caller, with or without a runtime.

use crate::lab::{BuildState, Lab};
use crate::LabError;
use loadlab_probe::{Launch, Launched, Limits, LimitsMode, ProbeError, Readiness};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// Serving HTTPS (the contract's `TLS_CERT` and `TLS_KEY`), and the CA that signed the
/// certificate, so the start-up health check (and anyone else) can trust it.
#[derive(Debug, Clone)]
pub struct ServeTls {
    /// `TLS_CERT`: the PEM certificate chain.
    pub cert: PathBuf,
    /// `TLS_KEY`: its PEM PKCS#8 private key.
    pub key: PathBuf,
    /// The CA certificate(s), PEM, that the certificate chains to.
    pub ca_pem: Vec<u8>,
}

impl ServeTls {
    /// The files of a throwaway [`loadlab_certs::CertDir`] (which must outlive the target).
    pub fn from_dir(certs: &loadlab_certs::CertDir) -> ServeTls {
        ServeTls {
            cert: certs.cert_path(),
            key: certs.key_path(),
            ca_pem: certs.ca_pem().as_bytes().to_vec(),
        }
    }

    /// A client configuration (HTTP/1.1 by ALPN) that trusts [`ServeTls::ca_pem`].
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, LabError> {
        loadlab_certs::client_config(&self.ca_pem, &[b"http/1.1"], None).map_err(LabError::from)
    }
}

/// How to start a target.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `PORT`; 0 lets the target pick a free one.
    pub port: u16,
    /// `HOST`; loopback unless a caller deliberately widens it.
    pub host: IpAddr,
    /// `WORKERS`; `None` leaves the target's default (the number of cores).
    pub workers: Option<usize>,
    /// `BACKLOG`; `None` leaves the target's default.
    pub backlog: Option<u32>,
    /// `UPSTREAM_URL`. An `http://` one also gives `UPSTREAM_GRPC_URL` (its scheme, host and
    /// port): the mock upstream serves gRPC on the same port ([`grpc_url_of`]).
    pub upstream_url: Option<String>,
    /// `UPSTREAM_GRPC_URL` in place of the one `upstream_url` implies: a plain mock upstream
    /// for gRPC beside an `https://` one (gRPC is served without TLS only).
    pub upstream_grpc_url: Option<String>,
    /// `UPSTREAM_CA`: the CA file an `https://` upstream's certificate chains to.
    pub upstream_ca: Option<PathBuf>,
    /// Serve HTTPS only (`TLS_CERT`, `TLS_KEY`); `None`: plain HTTP.
    pub tls: Option<ServeTls>,
    /// How long to wait for the address line and then for `/healthz` (a JVM needs a while).
    pub ready_timeout: Duration,
    /// CPUs the target may run on (Linux). Set before the program starts, so every thread it
    /// ever creates inherits it; pinning a PID afterwards would miss the worker threads.
    pub cpus: Option<Vec<usize>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            port: 0,
            host: IpAddr::from([127, 0, 0, 1]),
            workers: None,
            backlog: None,
            upstream_url: None,
            upstream_grpc_url: None,
            upstream_ca: None,
            tls: None,
            ready_timeout: Duration::from_secs(30),
            cpus: None,
        }
    }
}

/// A running target, launched through the probe's launcher (its own process group, a death
/// signal, output drained). Dropping it kills the target's process group.
#[derive(Debug)]
pub struct ServedTarget {
    name: String,
    launched: Launched,
    /// It serves HTTPS.
    https: bool,
}

impl ServedTarget {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where to send requests (an unspecified bind address is reached over loopback).
    pub fn addr(&self) -> SocketAddr {
        self.launched.addr()
    }

    /// `http://ADDR`, or `https://ADDR` when it serves TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr())
    }

    /// The process id, for resource sampling or pinning.
    pub fn pid(&self) -> u32 {
        self.launched.pid()
    }

    /// The last lines of the target's output.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.launched.output_tail()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.launched.exit_status().is_none()
    }

    /// Kills the target and reaps it (what drop does).
    pub fn stop(self) {}
}

impl Lab {
    /// The command that starts the built target `name` with `options` (environment, working
    /// directory), not yet spawned: `serve` runs it; `loadlab run --target` runs it under
    /// limits through the probe.
    pub fn command(&self, name: &str, options: &ServeOptions) -> Result<Command, LabError> {
        let target = self.target(name)?;
        match self.state(target)? {
            BuildState::Built => {}
            BuildState::Stale => return Err(LabError::Stale { name: name.into() }),
            BuildState::NotBuilt | BuildState::ToolchainMissing(_) | BuildState::Unavailable(_) => {
                return Err(LabError::NotBuilt { name: name.into() })
            }
        }
        let run = &target.manifest.run;
        let mut command = Command::new(target.run_program());
        command
            .args(&run.command[1..])
            .current_dir(&target.dir)
            .env("PORT", options.port.to_string())
            .env("HOST", options.host.to_string())
            .env("CONTENT_DIR", self.content_dir())
            .env_remove("UPSTREAM_URL")
            .env_remove("UPSTREAM_GRPC_URL")
            .env_remove("UPSTREAM_CA")
            .env_remove("TLS_CERT")
            .env_remove("TLS_KEY")
            .env_remove("WORKERS")
            .env_remove("BACKLOG")
            .envs(&run.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(workers) = options.workers {
            command.env("WORKERS", workers.to_string());
        }
        if let Some(backlog) = options.backlog {
            command.env("BACKLOG", backlog.to_string());
        }
        if let Some(url) = &options.upstream_url {
            command.env("UPSTREAM_URL", url);
        }
        let grpc_url = options
            .upstream_grpc_url
            .clone()
            .or_else(|| options.upstream_url.as_deref().and_then(grpc_url_of));
        if let Some(grpc) = grpc_url {
            command.env("UPSTREAM_GRPC_URL", grpc);
        }
        if let Some(ca) = &options.upstream_ca {
            command.env("UPSTREAM_CA", ca);
        }
        if let Some(tls) = &options.tls {
            command.env("TLS_CERT", &tls.cert).env("TLS_KEY", &tls.key);
        }
        Ok(command)
    }

    /// Starts the built target `name` and waits until it is ready.
    pub fn serve(&self, name: &str, options: &ServeOptions) -> Result<ServedTarget, LabError> {
        let command = self.command(name, options)?;
        let launch = Launch {
            command,
            description: name.to_string(),
            limits: Limits {
                pin: options.cpus.clone(),
                ..Limits::default()
            },
            // Pinning falls back to the affinity mask where no cpuset can be made (not
            // root): `lab serve --pin` must work for anyone.
            mode: LimitsMode::BestEffort,
            readiness: Readiness::AddressLine,
            health_path: "/healthz".into(),
            health_tls: options
                .tls
                .as_ref()
                .map(ServeTls::client_config)
                .transpose()?,
            timeout: options.ready_timeout,
            netns: None,
        };
        let launched = launch.start().map_err(|e| match e {
            ProbeError::Startup {
                message,
                stderr_tail,
                ..
            } => LabError::Startup {
                name: name.into(),
                message,
                stderr_tail,
            },
            ProbeError::Spawn { source, .. } => LabError::Spawn {
                name: name.into(),
                command: self
                    .target(name)
                    .map(|t| t.manifest.run.command.join(" "))
                    .unwrap_or_default(),
                source,
            },
            other => LabError::Startup {
                name: name.into(),
                message: other.to_string(),
                stderr_tail: Vec::new(),
            },
        })?;
        Ok(ServedTarget {
            name: name.to_string(),
            launched,
            https: options.tls.is_some(),
        })
    }
}

pub use loadlab_probe::launch::parse_address_line;

/// `UPSTREAM_GRPC_URL` for a mock upstream at `upstream_url`: `http://HOST:PORT`, the same
/// port (it tells gRPC's HTTP/2 from HTTP/1.1 by the connection's first bytes). `None` for
/// anything but a plain `http://` URL, where no gRPC upstream is implied.
pub fn grpc_url_of(upstream_url: &str) -> Option<String> {
    let uri: hyper::Uri = upstream_url.parse().ok()?;
    if uri.scheme_str() != Some("http") {
        return None;
    }
    Some(format!("http://{}", uri.authority()?))
}

#[cfg(test)]
mod tests {
    use super::grpc_url_of;

    #[test]
    fn the_grpc_url_is_the_upstreams_scheme_host_and_port() {
        let cases = [
            ("http://127.0.0.1:9100/", Some("http://127.0.0.1:9100")),
            (
                "http://127.0.0.1:9100/some/path?x=1",
                Some("http://127.0.0.1:9100"),
            ),
            ("http://[::1]:9100", Some("http://[::1]:9100")),
            ("http://localhost/", Some("http://localhost")),
            ("https://127.0.0.1:9443/", None),
            ("not a url", None),
        ];
        for (upstream, grpc) in cases {
            assert_eq!(grpc_url_of(upstream).as_deref(), grpc, "{upstream}");
        }
    }
}
