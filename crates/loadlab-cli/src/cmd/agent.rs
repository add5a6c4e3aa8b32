//! `loadlab agent`: the agent on the server's host (glue over `loadlab_agent`). It reads the
//! token and certificate files (making them on first start, private to their owner), builds
//! the agent's configuration, prints how to reach it, and serves until SIGINT or SIGTERM,
//! stopping what it launched. Exit codes: 0 stopped by a signal; 2 could not start.
//!
//! It never takes a token on the command line (argv is public in /proc).

use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_agent::protocol::{self, ServerRequest};
use loadlab_agent::{AgentConfig, Clock, Token};
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(
    about = "Run the agent on the server's host: the generator (--agent URL) launches or attaches to the server there and reads its CPU, memory, throttling and TCP counters",
    after_help = "Protocol and security model: docs/agent-protocol.md. Exit codes: 0 stopped by a signal; 2 could not start.\n\n\
                  Examples:\n  \
                  loadlab agent --listen 10.0.0.5:7070 --targets targets          # launch lab targets by name\n  \
                  loadlab agent --listen 10.0.0.5:7070 --cgroup nginx.service      # watch a systemd unit"
)]
pub struct AgentArgs {
    /// Address and port to listen on (HTTPS only).
    #[arg(long, default_value = "127.0.0.1:7070")]
    pub listen: SocketAddr,
    /// The certificate to serve (PEM) [default: a self-signed one kept in --state-dir].
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Where the default certificate and token are kept [default: /var/lib/loadlab-agent as
    /// root, else $XDG_STATE_HOME/loadlab-agent or ~/.local/state/loadlab-agent].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// The file holding the bearer token [default: <state-dir>/token, made when absent].
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Let a generator run a command line here (--exec): remote code execution by design;
    /// only on a host you trust.
    #[arg(long)]
    pub allow_exec: bool,
    /// Send load for a coordinator (`loadlab run|capacity|experiment --generators FLEET`):
    /// this host becomes one generator of a fleet, and a holder of the token may make it
    /// send HTTP requests to any address it names. Off unless given.
    #[arg(long)]
    pub generator: bool,
    /// The lab whose targets a generator may launch by name [default: found from here].
    #[arg(long)]
    pub targets: Option<PathBuf>,
    /// The default server: a process and its descendants.
    #[arg(long, group = "default_server")]
    pub pid: Option<u32>,
    /// The default server: a cgroup path or a systemd unit (x.service).
    #[arg(long, group = "default_server")]
    pub cgroup: Option<String>,
    /// The default server: the process listening on this port.
    #[arg(long, group = "default_server")]
    pub port: Option<u16>,
    /// The default server: a Podman or Docker container, by name or id.
    #[arg(long, group = "default_server")]
    pub container: Option<String>,
    /// How long a session lives without a request from its generator.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub lease: Duration,
    /// Tests only: shift every timestamp the agent reports by this many milliseconds.
    #[arg(long, hide = true, allow_negative_numbers = true, default_value_t = 0)]
    pub test_clock_offset_ms: i64,
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    if args.lease < Duration::from_millis(100) {
        bail!(
            "--lease {:?} is too short: give at least 100ms (e.g. --lease 10s)",
            args.lease
        );
    }
    let state_dir = args.state_dir.clone().unwrap_or_else(default_state_dir);
    make_private_dir(&state_dir)?;
    // Locked, checked (owner, mode), and cleared of what a killed agent left, before anything
    // else is read from it.
    let (state, reaped) = loadlab_agent::StateDir::open(&state_dir)?;
    let token_file = args
        .token_file
        .clone()
        .unwrap_or_else(|| state_dir.join("token"));
    let token = read_or_make_token(&token_file)?;
    let (cert_pem, key_pem) = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            check_owner_and_mode(key, "--tls-key", true)?;
            (
                std::fs::read(cert)
                    .with_context(|| format!("cannot read --tls-cert {}", cert.display()))?,
                std::fs::read(key)
                    .with_context(|| format!("cannot read --tls-key {}", key.display()))?,
            )
        }
        _ => default_pair(&state_dir, &args.listen)?,
    };
    let tls = loadlab_certs::server_config(&cert_pem, &key_pem, &[b"http/1.1"])
        .context("cannot use the agent's certificate and key")?;
    let fingerprint = protocol::fingerprint_pem(&cert_pem).map_err(anyhow::Error::msg)?;
    let default_server = match (&args.pid, &args.cgroup, &args.port, &args.container) {
        (Some(pid), ..) => Some(ServerRequest::Pid { pid: *pid }),
        (_, Some(path), ..) => Some(ServerRequest::Cgroup { path: path.clone() }),
        (_, _, Some(port), _) => Some(ServerRequest::Port { port: *port }),
        (.., Some(name)) => Some(ServerRequest::Container { name: name.clone() }),
        _ => None,
    };
    let mut config = AgentConfig::new(token, tls);
    config.allow_exec = args.allow_exec;
    config.generator = args.generator;
    // Chosen once, here, and checked (who may write it): never looked for again per launch.
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let lab = match loadlab_agent::lab::choose(args.targets.as_deref(), &cwd)? {
        loadlab_agent::lab::Chosen::Taken(dir) => {
            let line = format!("{} (targets launched by name)", dir.display());
            config.targets_dir = Some(dir);
            line
        }
        loadlab_agent::lab::Chosen::None(why) => {
            let line = format!("none: {why}");
            config.no_lab = why;
            line
        }
    };
    config.lease = args.lease;
    config.clock = Clock::new().with_offset_ms(args.test_clock_offset_ms);
    let state = std::sync::Arc::new(state);
    config.state_dir = Some(state.clone());
    let watching = match &default_server {
        Some(s) => s.describe(),
        None => "what each generator names (--target, --pid, --cgroup, --port, --container)".into(),
    };
    config.default_server = default_server;
    let listener = std::net::TcpListener::bind(args.listen).with_context(|| {
        format!(
            "cannot listen on {}: is it this host's address, and free?",
            args.listen
        )
    })?;
    let url = format!("https://{}", listener.local_addr()?);
    let token_path = token_file.canonicalize().unwrap_or(token_file);
    // Before "listening" is printed: whoever waits for that line finds the record complete.
    state.note_listening(loadlab_agent::state_dir::Listening {
        url: url.clone(),
        fingerprint: fingerprint.clone(),
        token_file: token_path.clone(),
        generator: args.generator,
    })?;
    for line in &reaped {
        println!("reaped what a previous agent left: {line}");
    }
    println!("loadlab agent listening on {url}");
    println!("  fingerprint: {fingerprint}");
    println!(
        "  token file:  {} (copy it to the generator's host)",
        token_path.display()
    );
    println!("  attaches to: {watching}");
    println!("  lab:         {lab}");
    println!(
        "  exec:        {}",
        if args.allow_exec {
            "allowed (--allow-exec): any holder of the token can run commands here"
        } else {
            "refused (lab targets by name only)"
        }
    );
    println!(
        "  generator:   {}",
        if args.generator {
            "yes (--generator): a holder of the token can make this host send load anywhere"
        } else {
            "no (it sends no load; --generator makes it one of a fleet)"
        }
    );
    println!(
        "  lease:       {} (a session without requests for that long is stopped)",
        humantime::format_duration(args.lease)
    );
    println!(
        "generator flags: --agent {url} --agent-token-file {} --agent-fingerprint {fingerprint}",
        token_path.display()
    );
    let _ = std::io::stdout().flush();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut stop_tx = Some(stop_tx);
    crate::signals::set_handler(move || {
        if let Some(tx) = stop_tx.take() {
            let _ = tx.send(());
        }
    })
    .context("cannot install the signal handler")?;
    loadlab_agent::serve(listener, config, async {
        let _ = stop_rx.await;
    })?;
    Ok(ExitCode::SUCCESS)
}

fn default_state_dir() -> PathBuf {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/loadlab-agent");
    }
    match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("loadlab-agent"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into()))
            .join(".local/state/loadlab-agent"),
    }
}

fn make_private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| {
            format!(
                "cannot create {}: pass --state-dir DIR you can write",
                dir.display()
            )
        })
}

fn check_owner_and_mode(path: &Path, what: &str, private: bool) -> anyhow::Result<()> {
    Ok(loadlab_agent::state_dir::check_owner_and_mode(
        path, what, private,
    )?)
}

/// Writes `bytes` to a new file readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(bytes)?;
    Ok(())
}

/// The token in `path`, made (32 random bytes as hex, mode 0600) when absent; refused when
/// others may read it.
fn read_or_make_token(path: &Path) -> anyhow::Result<Token> {
    if !path.exists() {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            make_private_dir(dir)?;
        }
        let hex = Token::generate_hex().map_err(anyhow::Error::msg)?;
        write_private(path, format!("{hex}\n").as_bytes())?;
    }
    check_owner_and_mode(path, "the token file", true)?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = protocol::parse_token(&text)
        .map_err(|why| anyhow::anyhow!("the token file {}: {why}", path.display()))?;
    Ok(Token::new(token))
}

/// The agent's own certificate and key in `dir`, made (self-signed through a throwaway CA,
/// for the listen address and the host's name) on first start and kept, so the fingerprint
/// stays the same across restarts.
fn default_pair(dir: &Path, listen: &SocketAddr) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let (cert, key) = (dir.join("agent-cert.pem"), dir.join("agent-key.pem"));
    if !cert.exists() || !key.exists() {
        make_private_dir(dir)?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let mut names = vec![
            listen.ip().to_string(),
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ];
        if !host.trim().is_empty() {
            names.push(host.trim().to_string());
        }
        names.dedup();
        let ca = loadlab_certs::Authority::new("loadlab agent CA")
            .context("cannot make the agent's certificate")?;
        let issued = ca
            .issue(&names)
            .context("cannot make the agent's certificate")?;
        let _ = std::fs::remove_file(&key);
        let _ = std::fs::remove_file(&cert);
        write_private(&key, issued.key_pem.as_bytes())?;
        write_private(&cert, issued.cert_pem.as_bytes())?;
    }
    check_owner_and_mode(&key, "the agent's key", true)?;
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    Ok((read(&cert)?, read(&key)?))
}
