//! `loadlab lab list|build|serve|verify`: the reference lab (targets/CONTRACT.md). Glue only:
//! the work is in `loadlab-lab`; this file parses flags, picks the targets directory, and
//! prints. Exit codes: 0 ok; 1 `verify` found a contract violation; 2 usage or runtime error
//! (returned as `Err`, printed once by `main`).

use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use loadlab_lab::verify::{verify_target, verify_url};
use loadlab_lab::{BuildAction, Lab, Outcome, Report, ServeOptions, ServeTls, VerifyOptions};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "The reference lab: list, build, serve and verify the targets in targets/",
    after_help = "Exit codes: 0 ok; 1 verification found a contract violation; 2 bad usage or \
                  a build, start-up or I/O error."
)]
pub struct LabArgs {
    /// The targets directory [default: the nearest targets/ holding CONTRACT.md, searching
    /// from the current directory upwards]
    #[arg(long, global = true, value_name = "DIR")]
    pub targets: Option<PathBuf>,

    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List the targets and whether each is built, stale, not built, or missing its toolchain.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Build a target, or `all`, with its own build command; up-to-date targets are skipped.
    Build {
        /// A target name, or `all`.
        name: String,
        /// Build even if the sources did not change.
        #[arg(long)]
        force: bool,
    },
    /// Start a built target, wait until /healthz answers, print its URL; Ctrl-C stops it.
    Serve {
        name: String,
        #[command(flatten)]
        target: TargetFlags,
        /// UPSTREAM_URL for /upstream, e.g. the URL `loadlab upstream` printed; an http:// URL
        /// also sets UPSTREAM_GRPC_URL to its host and port (the mock upstream serves gRPC on
        /// the same port).
        #[arg(long, value_name = "URL")]
        upstream: Option<String>,
        /// UPSTREAM_CA: the CA file an https:// upstream's certificate chains to (the `ca
        /// PATH` that `loadlab upstream --tls` prints).
        #[arg(long, value_name = "FILE")]
        upstream_ca: Option<PathBuf>,
        /// Serve HTTPS: loadlab makes a throwaway CA and a certificate for 127.0.0.1, ::1
        /// and localhost (TLS_CERT, TLS_KEY), removed when it stops; it prints the CA's path
        /// for `loadlab run --cacert`.
        #[arg(long)]
        tls: bool,
    },
    /// Check a target against the workload contract: by NAME (started with a mock upstream of
    /// its own) or by URL (a running server; add --upstream to check upstream call counts).
    Verify {
        /// A target name, or a URL such as http://127.0.0.1:8080
        target: String,
        #[command(flatten)]
        flags: TargetFlags,
        /// With a URL: the mock upstream that server calls (`loadlab upstream`), whose
        /// /__stats counts its calls.
        #[arg(long, value_name = "URL")]
        upstream: Option<String>,
        /// With a URL: the server does not implement /upstream-grpc (by name, the target's
        /// `capabilities` in target.toml say so), so its checks are skipped.
        #[arg(long)]
        no_upstream_grpc: bool,
        /// With a URL: the server serves its own Prometheus /metrics (by name, the target's
        /// `capabilities` in target.toml say so), so it is checked.
        #[arg(long)]
        metrics: bool,
        /// With a URL: the server serves the contract's gRPC service on its port (by name,
        /// the target's `capabilities` in target.toml say so), so it is checked.
        #[arg(long)]
        grpc: bool,
        /// Print the report as JSON (every check, passed or not).
        #[arg(long)]
        json: bool,
        /// By NAME: serve the target (and its mock upstream) over HTTPS with a throwaway CA
        /// and run every check over TLS, plus ALPN, the certificate served, session
        /// resumption, and that TLS_CERT without TLS_KEY is refused with exit status 2.
        #[arg(long)]
        tls: bool,
        /// With an https:// URL: the CA certificates (PEM) that its certificate (and an
        /// https:// --upstream's) chains to.
        #[arg(long, value_name = "FILE")]
        cacert: Option<PathBuf>,
    },
}

/// How a target process is started.
#[derive(Debug, Args)]
pub struct TargetFlags {
    /// PORT for the target (0 lets it pick a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// HOST for the target to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// WORKERS for the target [default: the target's own, one per core]
    #[arg(long)]
    pub workers: Option<usize>,
    /// BACKLOG for the target [default: the target's own, 1024 for the Rust targets]
    #[arg(long)]
    pub backlog: Option<u32>,
    /// Pin the target to these CPUs (Linux), e.g. --pin 1, --pin 0,1 or --pin 0-1; every
    /// thread it starts inherits the pinning. (`loadlab run --target` also takes --cpus, a
    /// CPU quota.)
    #[arg(long, value_name = "CPUS")]
    pub pin: Option<String>,
    /// Longest wait for the target to print its address and answer /healthz, e.g. 30s.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub ready_timeout: Duration,
}

impl TargetFlags {
    fn serve_options(&self, upstream_url: Option<String>) -> anyhow::Result<ServeOptions> {
        if self.workers == Some(0) {
            bail!("--workers must be at least 1, got 0");
        }
        if self.backlog == Some(0) {
            bail!("--backlog must be at least 1, got 0");
        }
        Ok(ServeOptions {
            port: self.port,
            host: self.host,
            workers: self.workers,
            backlog: self.backlog,
            upstream_url,
            upstream_grpc_url: None,
            ready_timeout: self.ready_timeout,
            upstream_ca: None,
            tls: None,
            cpus: self
                .pin
                .as_deref()
                .map(|p| {
                    loadlab_probe::limits::parse_cpu_list(p, loadlab_probe::limits::online_cpus())
                })
                .transpose()?,
        })
    }
}

pub fn run(args: LabArgs) -> anyhow::Result<ExitCode> {
    let lab = || -> anyhow::Result<Lab> {
        Ok(match &args.targets {
            Some(dir) => Lab::open(dir)?,
            None => Lab::discover(
                &std::env::current_dir().context("cannot read the current directory")?,
            )?,
        })
    };
    match &args.command {
        LabCommand::List { json } => list(&lab()?, *json),
        LabCommand::Build { name, force } => build(&lab()?, name, *force),
        LabCommand::Serve {
            name,
            target,
            upstream,
            upstream_ca,
            tls,
        } => {
            if upstream_ca.is_some()
                && !upstream
                    .as_deref()
                    .is_some_and(|u| u.starts_with("https://"))
            {
                bail!("--upstream-ca is the CA of an https:// --upstream: give --upstream https://...");
            }
            let mut options = target.serve_options(upstream.clone())?;
            options.upstream_ca = upstream_ca.clone();
            serve(&lab()?, name, options, *tls)
        }
        LabCommand::Verify {
            target,
            flags,
            upstream,
            no_upstream_grpc,
            metrics,
            grpc,
            json,
            tls,
            cacert,
        } => {
            let is_url = target.starts_with("http://") || target.starts_with("https://");
            if !is_url && upstream.is_some() {
                bail!("--upstream is for `verify URL`; `verify {target}` starts a mock upstream of its own");
            }
            if !is_url && *no_upstream_grpc {
                bail!("--no-upstream-grpc is for `verify URL`; `verify {target}` reads the target's capabilities from its target.toml");
            }
            if !is_url && *metrics {
                bail!("--metrics is for `verify URL`; `verify {target}` reads the target's capabilities from its target.toml");
            }
            if !is_url && *grpc {
                bail!("--grpc is for `verify URL`; `verify {target}` reads the target's capabilities from its target.toml");
            }
            if is_url && *tls {
                bail!("--tls is for `verify NAME` (loadlab makes the certificate); to verify a running https:// server, give its URL and --cacert FILE");
            }
            if !is_url && cacert.is_some() {
                bail!("--cacert is for `verify https://URL`; `verify {target} --tls` makes and trusts a CA of its own");
            }
            let ca_pem = cacert
                .as_ref()
                .map(|p| {
                    std::fs::read(p).with_context(|| {
                        format!("--cacert: cannot read {}; check the path", p.display())
                    })
                })
                .transpose()?;
            let serve = flags.serve_options(None)?;
            let lab = lab()?;
            let options = VerifyOptions {
                content_dir: Some(lab.content_dir()),
                upstream_url: upstream.clone(),
                upstream_grpc: !no_upstream_grpc,
                metrics: *metrics,
                grpc: *grpc,
                tls: *tls,
                ca_pem,
                ..VerifyOptions::default()
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let report = runtime.block_on(async {
                if is_url {
                    verify_url(target, &options).await
                } else {
                    verify_target(&lab, target, &serve, &options).await
                }
            })?;
            print_report(&report, *json)?;
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn list(lab: &Lab, json: bool) -> anyhow::Result<ExitCode> {
    let rows = lab.list()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<20} {:<10} {:<12} {:<10} {:<8} {:<14} STATE",
        "NAME", "LANGUAGE", "FRAMEWORK", "VERSION", "WARM-UP", "CAPABILITIES"
    );
    for row in &rows {
        let state = match &row.state {
            loadlab_lab::BuildState::ToolchainMissing(programs) => {
                format!("{} (needs {})", row.state.label(), programs.join(", "))
            }
            loadlab_lab::BuildState::Unavailable(why) => {
                format!("{} ({why})", row.state.label())
            }
            state => state.label().to_string(),
        };
        let capabilities = if row.capabilities.is_empty() {
            "-".to_string()
        } else {
            row.capabilities.join(",")
        };
        println!(
            "{:<20} {:<10} {:<12} {:<10} {:<8} {capabilities:<14} {state}",
            row.name,
            row.language,
            row.framework,
            row.framework_version,
            format!("{}s", row.warmup_secs)
        );
    }
    if rows.is_empty() {
        eprintln!(
            "no targets in {} (each needs a target.toml)",
            lab.root().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn build(lab: &Lab, name: &str, force: bool) -> anyhow::Result<ExitCode> {
    for target in lab.select(name)? {
        let outcome = lab.build(target, force)?;
        match outcome.action {
            BuildAction::Cached => println!("{}: up to date", outcome.name),
            BuildAction::Built => println!(
                "{}: built in {:.1} s",
                outcome.name,
                outcome.duration.as_secs_f64()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(lab: &Lab, name: &str, mut options: ServeOptions, tls: bool) -> anyhow::Result<ExitCode> {
    // Removed (with the files) when this returns, after the target has stopped.
    let certs = if tls {
        Some(loadlab_certs::CertDir::create(&[options.host])?)
    } else {
        None
    };
    options.tls = certs.as_ref().map(ServeTls::from_dir);
    let served = lab.serve(name, &options)?;
    let (stop_tx, stop_rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop_tx.send(());
    })
    .context("cannot install the Ctrl-C handler")?;
    println!("{}", served.base_url());
    if let Some(certs) = &certs {
        // Second stdout line: what a client must trust (scripts read it).
        println!("cacert {}", certs.ca_path().display());
        eprintln!(
            "serving HTTPS with a throwaway CA: loadlab run --cacert {} {}/",
            certs.ca_path().display(),
            served.base_url()
        );
    }
    eprintln!("{name} is ready (pid {}); Ctrl-C stops it", served.pid());
    let _ = stop_rx.recv();
    served.stop();
    drop(certs);
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    for check in &report.checks {
        match &check.outcome {
            Outcome::Pass => {}
            Outcome::Fail { expected, got } => {
                println!("FAIL {} [{}]", check.endpoint, check.what);
                println!("     expected: {expected}");
                println!("     got:      {got}");
            }
            Outcome::Skip { reason } => {
                println!("SKIP {} [{}]: {reason}", check.endpoint, check.what)
            }
        }
    }
    if let Some(upstream) = &report.upstream {
        println!(
            "upstream: pooled {} requests over {} connections (reuse ratio {:.1}); per-call {} requests over {} connections",
            upstream.pooled.requests,
            upstream.pooled.connections,
            upstream.pooled_reuse_ratio.unwrap_or(0.0),
            upstream.per_call.requests,
            upstream.per_call.connections
        );
        if upstream.https {
            println!(
                "upstream TLS handshakes: pooled {} full, {} resumed; per-call {} full, {} resumed",
                upstream.pooled.tls_full,
                upstream.pooled.tls_resumed,
                upstream.per_call.tls_full,
                upstream.per_call.tls_resumed
            );
        }
    }
    if let Some(tls) = &report.tls {
        println!(
            "TLS: ALPN chose {} ({}); a new connection: TLS 1.3 {}, TLS 1.2 {}",
            tls.alpn, tls.version, tls.resumption_tls13, tls.resumption_tls12
        );
    }
    if let Some(grpc) = &report.upstream_grpc {
        println!(
            "upstream gRPC: pooled {} calls over {} connections ({} streams); per-call {} calls over {} connections",
            grpc.pooled.grpc_requests,
            grpc.pooled.grpc_connections,
            grpc.pooled.grpc_streams,
            grpc.per_call.grpc_requests,
            grpc.per_call.grpc_connections
        );
    }
    let (passed, failed, skipped) = report.counts();
    let verdict = if report.passed() { "PASS" } else { "FAIL" };
    println!(
        "{verdict} {} ({}): {passed} checks passed, {failed} failed, {skipped} skipped",
        report.target, report.addr
    );
    if !report.passed() {
        println!("broken endpoints: {}", report.failed_endpoints().join(", "));
    }
    Ok(())
}
