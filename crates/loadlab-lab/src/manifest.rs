//! A target's `target.toml`: everything loadlab needs to build, run and describe a target,
//! so that adding one needs no change to loadlab. Paths in it are relative to the file's
//! directory, which is also the working directory of its commands.

use crate::LabError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name loadlab looks for in each directory under `targets/`.
pub const MANIFEST_FILE: &str = "target.toml";

/// `GET /upstream-grpc`: unary gRPC calls to `UPSTREAM_GRPC_URL` (targets/CONTRACT.md).
pub const UPSTREAM_GRPC: &str = "upstream-grpc";

/// `GET /metrics`: the process's own Prometheus text exposition (targets/CONTRACT.md).
pub const METRICS: &str = "metrics";

/// HTTP/3 over QUIC beside HTTPS, on the same port number over UDP (targets/CONTRACT.md).
pub const HTTP3: &str = "http3";

/// The contract's gRPC service, `loadlab.lab.v1.Workload`, on the target's own port
/// (targets/CONTRACT.md; `targets/common/proto/workload.proto`).
pub const GRPC: &str = "grpc";

/// Every capability a manifest may declare: the contract's optional parts.
pub const CAPABILITIES: &[&str] = &[UPSTREAM_GRPC, METRICS, HTTP3, GRPC];

/// The parsed manifest, as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Must equal the directory name, so `lab build NAME` and the tree never disagree.
    pub name: String,
    pub language: String,
    pub framework: String,
    /// The framework version the target is pinned to (what a result table reports).
    pub framework_version: String,
    #[serde(default)]
    pub description: String,
    /// Programs that must be on `PATH` to build the target (`lab list` says when one is not).
    #[serde(default)]
    pub toolchain: Vec<String>,
    /// How to install the toolchain when it is missing (a command to show, never run), e.g.
    /// `apt-get install golang-go`; `lab build` quotes it in its error.
    #[serde(default)]
    pub toolchain_install: String,
    /// Files and directories whose contents decide whether a rebuild is needed.
    pub sources: Vec<String>,
    /// Recommended warm-up before measuring, in seconds (a JIT runtime needs more).
    #[serde(default)]
    pub warmup_secs: u64,
    /// Optional parts of the contract the target implements, from [`CAPABILITIES`] (e.g.
    /// `["upstream-grpc"]`); `lab verify` skips, and says it skipped, the checks of the others.
    #[serde(default)]
    pub capabilities: Vec<String>,
    pub build: BuildSpec,
    pub run: RunSpec,
}

/// `[build]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// Program and arguments; no shell is involved.
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files a successful build leaves behind; all present means "built".
    #[serde(default)]
    pub artifacts: Vec<String>,
}

/// `[run]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Program and arguments; a program containing `/` is relative to the target directory.
    pub command: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The environment variables a launcher may set besides the contract's `WORKERS` and
    /// `BACKLOG`, each with the shape of its value (see [`crate::knobs`]): a launch from
    /// another host may set nothing else.
    #[serde(default)]
    pub knobs: BTreeMap<String, crate::knobs::Shape>,
}

/// A manifest plus where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub manifest: Manifest,
    /// The target's directory (absolute).
    pub dir: PathBuf,
}

impl Target {
    /// Reads and checks `dir/target.toml`.
    pub fn load(dir: &Path) -> Result<Self, LabError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| LabError::Io {
            context: format!("cannot read {}", path.display()),
            source,
        })?;
        let manifest = parse(&text).map_err(|message| LabError::Manifest {
            path: path.clone(),
            message,
        })?;
        let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if manifest.name != dir_name {
            return Err(LabError::Manifest {
                path,
                message: format!(
                    "name is {:?} but the directory is {dir_name:?}: make them equal",
                    manifest.name
                ),
            });
        }
        Ok(Target {
            manifest,
            dir: dir.to_path_buf(),
        })
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Whether the manifest declares `capability` (one of [`CAPABILITIES`]).
    pub fn has(&self, capability: &str) -> bool {
        self.manifest.capabilities.iter().any(|c| c == capability)
    }

    /// A path from the manifest, resolved against the target directory.
    pub fn resolve(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// The artifacts that a build must leave behind, resolved.
    pub fn artifacts(&self) -> Vec<PathBuf> {
        self.manifest
            .build
            .artifacts
            .iter()
            .map(|a| self.resolve(a))
            .collect()
    }

    /// Whether `name=value` may be set on this target by a launch from another host: a
    /// knob of the contract or of its manifest, with a value of the knob's shape.
    pub fn check_knob(&self, name: &str, value: &str) -> Result<(), crate::knobs::Refused> {
        crate::knobs::check(&self.manifest.run.knobs, name, value)
    }

    /// The program to run: relative to the target directory when it contains a `/`,
    /// otherwise looked up on `PATH`.
    pub fn run_program(&self) -> PathBuf {
        let program = &self.manifest.run.command[0];
        if program.contains('/') {
            self.resolve(program)
        } else {
            PathBuf::from(program)
        }
    }
}

/// Parses and validates manifest text; the error is a one-line message naming the fix.
pub fn parse(text: &str) -> Result<Manifest, String> {
    let manifest: Manifest = toml::from_str(text).map_err(|e| e.to_string().trim().to_string())?;
    if manifest.name.is_empty() {
        return Err("name must not be empty".into());
    }
    if manifest.build.command.is_empty() {
        return Err("build.command must name a program, e.g. [\"make\"]".into());
    }
    if manifest.run.command.is_empty() {
        return Err("run.command must name a program, e.g. [\"./server\"]".into());
    }
    if manifest.sources.is_empty() {
        return Err("sources must list at least one file or directory, e.g. [\".\"]".into());
    }
    if let Some(unknown) = manifest
        .capabilities
        .iter()
        .find(|c| !CAPABILITIES.contains(&c.as_str()))
    {
        return Err(format!(
            "capabilities: {unknown:?} is not one loadlab knows: use {}",
            CAPABILITIES.join(", ")
        ));
    }
    crate::knobs::check_declared(&manifest.run.knobs)?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        name = "go-nethttp"
        language = "go"
        framework = "net/http"
        framework_version = "1.23"
        sources = ["."]
        [build]
        command = ["go", "build", "-o", "server"]
        artifacts = ["server"]
        [run]
        command = ["./server"]
    "#;

    #[test]
    fn minimal_manifest_parses_with_defaults() {
        let m = parse(MINIMAL).unwrap();
        assert_eq!(m.name, "go-nethttp");
        assert_eq!(m.warmup_secs, 0);
        assert!(m.toolchain.is_empty() && m.build.env.is_empty() && m.run.env.is_empty());
        assert!(m.toolchain_install.is_empty());
        assert!(m.capabilities.is_empty());
    }

    #[test]
    fn capabilities_are_checked_against_the_known_ones() {
        let with = MINIMAL.replace(
            "sources",
            "capabilities = [\"upstream-grpc\"]\n        sources",
        );
        let target = Target {
            manifest: parse(&with).unwrap(),
            dir: PathBuf::from("/lab/go-nethttp"),
        };
        assert!(target.has(UPSTREAM_GRPC));
        let typo = MINIMAL.replace(
            "sources",
            "capabilities = [\"upstream-grcp\"]\n        sources",
        );
        let err = parse(&typo).unwrap_err();
        assert!(
            err.contains("\"upstream-grcp\"") && err.contains("use upstream-grpc"),
            "{err}"
        );
    }

    #[test]
    fn mistakes_are_reported_with_the_field() {
        let typo = MINIMAL.replace("framework_version", "framework_versoin");
        assert!(parse(&typo).unwrap_err().contains("framework_versoin"));
        let empty = MINIMAL.replace(r#"command = ["./server"]"#, "command = []");
        assert!(parse(&empty).unwrap_err().contains("run.command"));
    }

    #[test]
    fn the_run_program_is_relative_to_the_target_only_with_a_slash() {
        let target = Target {
            manifest: parse(MINIMAL).unwrap(),
            dir: PathBuf::from("/lab/go-nethttp"),
        };
        assert_eq!(
            target.run_program(),
            PathBuf::from("/lab/go-nethttp/./server")
        );
        let mut on_path = target.clone();
        on_path.manifest.run.command = vec!["java".into()];
        assert_eq!(on_path.run_program(), PathBuf::from("java"));
    }
}
