//! The reference lab (issue 5): the targets in `targets/`, and everything loadlab does with
//! them before it measures anything. A target that answers wrongly is not benchmarked, so
//! this crate's job ends where measuring starts: it never generates load.
//!
//! Layout:
//! - [`manifest`]: a target's `target.toml` (language, framework, build and run commands).
//! - [`knobs`]: the environment a launch may set on a target (names and value shapes).
//! - [`lab`]: [`Lab`], the set of manifests under a `targets/` directory, and `list`.
//! - [`fingerprint`]: hashing a target's sources, so builds are cached and redone on change.
//! - [`toolchain`]: whether the programs a target needs are on `PATH`.
//! - [`builder`]: `build NAME|all`, running each target's own build command.
//! - [`serve`]: starting a built target, reading its address line, waiting for `/healthz`;
//!   the returned [`ServedTarget`] kills the process when dropped.
//! - [`content`]: loadlab's own reference rendering of the portfolio (an implementation
//!   independent of any target's, checked against `targets/content/expected/`).
//! - [`verify`]: the contract checks and the [`Report`] naming each failed endpoint.

pub mod builder;
pub mod content;
pub mod fingerprint;
pub mod knobs;
pub mod lab;
pub mod manifest;
pub mod serve;
pub mod toolchain;
pub mod verify;

pub use builder::{BuildAction, BuildOutcome};
pub use lab::{BuildState, Lab, TargetStatus};
pub use manifest::{Manifest, Target};
pub use serve::{ServeOptions, ServeTls, ServedTarget};
pub use verify::{Check, Outcome, Report, VerifyOptions};

use std::path::PathBuf;

/// Everything that can go wrong in the lab. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("no targets directory (one holding CONTRACT.md) found from {searched_from}: run loadlab inside its repository or pass --targets DIR")]
    NoTargetsDir { searched_from: PathBuf },
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("no target named {name:?}; known targets: {} (see `loadlab lab list`)", known.join(", "))]
    UnknownTarget { name: String, known: Vec<String> },
    #[error("target {name} needs {} on PATH to build; install it{} or pick another target", programs.join(", "), install_hint(install))]
    ToolchainMissing {
        name: String,
        programs: Vec<String>,
        /// The manifest's `toolchain_install` command (empty when it gives none).
        install: String,
    },
    #[error("cannot read source {path}: {source} (fix `sources` in the target's target.toml)")]
    Source {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start `{command}` for {name}: {source}")]
    Spawn {
        name: String,
        command: String,
        source: std::io::Error,
    },
    #[error("building {name} failed: `{command}` exited with {status} (its output is above)")]
    BuildFailed {
        name: String,
        command: String,
        status: std::process::ExitStatus,
    },
    #[error("building {name} succeeded but {path} does not exist: fix `build.artifacts` in its target.toml")]
    ArtifactMissing { name: String, path: PathBuf },
    #[error("target {name} is not built: run `loadlab lab build {name}`")]
    NotBuilt { name: String },
    #[error("target {name} changed since it was built: run `loadlab lab build {name}`")]
    Stale { name: String },
    #[error("target {name} did not start: {message}{}", tail(stderr_tail))]
    Startup {
        name: String,
        message: String,
        stderr_tail: Vec<String>,
    },
    #[error("invalid target URL {url:?}: {reason} (expected http://HOST:PORT, or https://HOST:PORT with the CA to trust)")]
    BadUrl { url: String, reason: String },
    #[error("verifying a URL needs the reference content: set VerifyOptions::content_dir to targets/content")]
    NoReferenceContent,
    #[error(transparent)]
    Content(#[from] content::ContentError),
    #[error(transparent)]
    Upstream(#[from] loadlab_upstream::UpstreamError),
    #[error("TLS: {0}")]
    Certs(#[from] loadlab_certs::CertError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

fn install_hint(command: &str) -> String {
    if command.is_empty() {
        String::new()
    } else {
        format!(" (`{command}`)")
    }
}

fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last stderr lines:\n  {}", lines.join("\n  "))
    }
}
