//! `lab build NAME|all`: runs each target's own build command (loadlab knows no toolchain),
//! skipped when the sources' fingerprint matches the last successful build and the artifacts
//! are still there.

use crate::lab::Lab;
use crate::manifest::Target;
use crate::{fingerprint, toolchain, LabError};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Variables a target's build does not inherit (see [`Lab::build`]).
const BUILD_ENV_NOT_INHERITED: &[&str] = &[
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTC_WORKSPACE_WRAPPER",
    "CLIPPY_ARGS",
];

/// What cargo sets for a package's test or binary while it runs (its name, version and
/// directories): a target's build started from a test of one loadlab crate would otherwise
/// see them, and a dependency whose build script watches one of them (ring watches
/// `CARGO_MANIFEST_DIR` and `CARGO_PKG_NAME`) is compiled again, with everything above it,
/// each time a test of another crate builds the same target: two minutes of every cold CI run.
const BUILD_ENV_PREFIXES_NOT_INHERITED: &[&str] = &[
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Whether the variable `name` is left out of a target's build's environment.
fn not_inherited(name: &str) -> bool {
    BUILD_ENV_NOT_INHERITED.contains(&name)
        || BUILD_ENV_PREFIXES_NOT_INHERITED
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// What `build` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildAction {
    /// Up to date: nothing ran.
    Cached,
    /// The build command ran and succeeded.
    Built,
}

/// One target's build result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuildOutcome {
    pub name: String,
    pub action: BuildAction,
    /// Wall time of the build command (zero when cached).
    pub duration: Duration,
    pub fingerprint: String,
}

impl Lab {
    /// Builds `target` unless it is up to date (or `force` is set). The build command's
    /// output goes to this process's stdout and stderr, so a failure explains itself.
    pub fn build(&self, target: &Target, force: bool) -> Result<BuildOutcome, LabError> {
        let missing = toolchain::missing(&target.manifest.toolchain);
        if !missing.is_empty() {
            return Err(LabError::ToolchainMissing {
                name: target.name().to_string(),
                programs: missing,
                install: target.manifest.toolchain_install.clone(),
            });
        }
        // One build of a target at a time, across processes: a second `lab build` of the same
        // target (CI builds the lab's targets beside its own compile while the lab tests may
        // ask for them too) waits for the first, then finds the target up to date, instead of
        // running a second compiler in the same directory. Released when this returns.
        let _lock = self.build_lock(target)?;
        let fingerprint = fingerprint::of(target)?;
        let artifacts_present = target.artifacts().iter().all(|a| a.exists());
        if !force && artifacts_present && self.stamp(target).as_deref() == Some(&fingerprint) {
            return Ok(BuildOutcome {
                name: target.name().to_string(),
                action: BuildAction::Cached,
                duration: Duration::ZERO,
                fingerprint,
            });
        }
        let spec = &target.manifest.build;
        let shown = spec.command.join(" ");
        let started = Instant::now();
        let mut command = Command::new(&spec.command[0]);
        // What points cargo elsewhere or wraps rustc for the build loadlab itself came from
        // (its test suite lints as it compiles, with clippy-driver as the workspace's rustc
        // wrapper) is not the target's: a Rust target built with them would put its binary
        // outside its directory, or fail on its own lints. Nor are the variables cargo sets
        // for the test or binary that asked for the build.
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(not_inherited) {
                command.env_remove(name);
            }
        }
        let status = command
            .args(&spec.command[1..])
            .current_dir(&target.dir)
            .envs(&spec.env)
            .stdin(Stdio::null())
            .stdout(stdout_to_stderr())
            .status()
            .map_err(|source| LabError::Spawn {
                name: target.name().to_string(),
                command: shown.clone(),
                source,
            })?;
        if !status.success() {
            return Err(LabError::BuildFailed {
                name: target.name().to_string(),
                command: shown,
                status,
            });
        }
        if let Some(missing) = target.artifacts().into_iter().find(|a| !a.exists()) {
            return Err(LabError::ArtifactMissing {
                name: target.name().to_string(),
                path: missing,
            });
        }
        // The fingerprint taken before the build: if a source changed meanwhile, the next
        // build sees a mismatch and rebuilds, which is the safe direction.
        self.write_stamp(target, &fingerprint)?;
        Ok(BuildOutcome {
            name: target.name().to_string(),
            action: BuildAction::Built,
            duration: started.elapsed(),
            fingerprint,
        })
    }

    /// Takes `target`'s build lock (an exclusive lock on a file beside the stamps), waiting
    /// for another process's build of it to end.
    fn build_lock(&self, target: &Target) -> Result<std::fs::File, LabError> {
        let path = self.stamp_dir().join(format!("{}.lock", target.name()));
        let io = |source| LabError::Io {
            context: format!(
                "cannot take the build lock of {} ({})",
                target.name(),
                path.display()
            ),
            source,
        };
        std::fs::create_dir_all(self.stamp_dir()).map_err(io)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    /// Builds `NAME`, or every target for `all`, stopping at the first failure.
    pub fn build_named(&self, name: &str, force: bool) -> Result<Vec<BuildOutcome>, LabError> {
        self.select(name)?
            .into_iter()
            .map(|t| self.build(t, force))
            .collect()
    }
}

/// The build's stdout joins our stderr, so loadlab's own stdout stays machine-readable.
fn stdout_to_stderr() -> Stdio {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            return Stdio::from(fd);
        }
    }
    Stdio::inherit()
}
