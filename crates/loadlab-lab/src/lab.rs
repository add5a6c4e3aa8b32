//! [`Lab`]: the targets under one `targets/` directory, found by their `target.toml`, and
//! their build state. Reading the lab never builds or runs anything.

use crate::manifest::{Target, MANIFEST_FILE};
use crate::{fingerprint, toolchain, LabError};
use std::path::{Path, PathBuf};

/// The file that marks a directory as a lab's `targets/` directory.
pub const CONTRACT_FILE: &str = "CONTRACT.md";

/// The targets of one `targets/` directory.
#[derive(Debug, Clone)]
pub struct Lab {
    root: PathBuf,
    targets: Vec<Target>,
    /// Stacks the lab cannot hold here (`unavailable.toml`), listed with what they need.
    unavailable: Vec<Unavailable>,
}

/// A stack left out of the lab, and what it would need (`targets/unavailable.toml`).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Unavailable {
    pub name: String,
    pub language: String,
    pub framework: String,
    /// Which post ran it.
    pub post: String,
    /// What this machine lacks, e.g. a package registry it cannot reach.
    pub needs: String,
}

#[derive(serde::Deserialize)]
struct UnavailableFile {
    #[serde(default)]
    stack: Vec<Unavailable>,
}

/// The list of stacks the lab cannot hold, beside the targets.
const UNAVAILABLE_FILE: &str = "unavailable.toml";

/// Whether a target can be served as it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "state", content = "missing")]
pub enum BuildState {
    /// Artifacts present and built from the current sources.
    Built,
    /// Artifacts present, but sources changed since.
    Stale,
    NotBuilt,
    /// These build programs are not on `PATH`.
    ToolchainMissing(Vec<String>),
    /// Not in the lab: what it would need (a package registry this machine cannot reach).
    Unavailable(String),
}

impl BuildState {
    /// Short label for tables: `built`, `stale`, `not-built`, `toolchain-missing`.
    pub fn label(&self) -> &'static str {
        match self {
            BuildState::Built => "built",
            BuildState::Stale => "stale",
            BuildState::NotBuilt => "not-built",
            BuildState::ToolchainMissing(_) => "toolchain-missing",
            BuildState::Unavailable(_) => "unavailable",
        }
    }
}

/// One row of `lab list`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TargetStatus {
    pub name: String,
    pub language: String,
    pub framework: String,
    pub framework_version: String,
    pub warmup_secs: u64,
    /// The optional parts of the contract it implements (`upstream-grpc`).
    pub capabilities: Vec<String>,
    /// In JSON: `"state": "built"`, plus `"missing": [...]` for a missing toolchain.
    #[serde(flatten)]
    pub state: BuildState,
}

impl Lab {
    /// Opens `root` (a `targets/` directory) and reads every `*/target.toml` in it.
    pub fn open(root: &Path) -> Result<Self, LabError> {
        let root = root.canonicalize().map_err(|source| LabError::Io {
            context: format!("cannot open targets directory {}", root.display()),
            source,
        })?;
        let entries = std::fs::read_dir(&root).map_err(|source| LabError::Io {
            context: format!("cannot list {}", root.display()),
            source,
        })?;
        let mut targets = Vec::new();
        for entry in entries.flatten() {
            let dir = entry.path();
            if dir.join(MANIFEST_FILE).is_file() {
                targets.push(Target::load(&dir)?);
            }
        }
        targets.sort_by(|a, b| a.name().cmp(b.name()));
        let unavailable = match std::fs::read_to_string(root.join(UNAVAILABLE_FILE)) {
            Ok(text) => {
                toml::from_str::<UnavailableFile>(&text)
                    .map_err(|e| LabError::Io {
                        context: format!("{}/{UNAVAILABLE_FILE}", root.display()),
                        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
                    })?
                    .stack
            }
            Err(_) => Vec::new(),
        };
        Ok(Lab {
            root,
            targets,
            unavailable,
        })
    }

    /// Finds the `targets/` directory from `start` upwards (the first ancestor that has a
    /// `targets/CONTRACT.md`, or `start` itself if it is one) and opens it.
    pub fn discover(start: &Path) -> Result<Self, LabError> {
        match Lab::find(start) {
            Some(dir) => Lab::open(&dir),
            None => Err(LabError::NoTargetsDir {
                searched_from: start.to_path_buf(),
            }),
        }
    }

    /// Where [`Lab::discover`] would open a lab from `start`, without reading it: a caller
    /// that runs what a lab holds (the agent) checks who may write it first.
    pub fn find(start: &Path) -> Option<PathBuf> {
        for dir in start.ancestors() {
            if dir.join(CONTRACT_FILE).is_file() && dir.file_name() == Some("targets".as_ref()) {
                return Some(dir.to_path_buf());
            }
            let candidate = dir.join("targets");
            if candidate.join(CONTRACT_FILE).is_file() {
                return Some(candidate);
            }
        }
        None
    }

    /// The `targets/` directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The shared portfolio content every target serves.
    pub fn content_dir(&self) -> PathBuf {
        self.root.join("content")
    }

    /// Where build fingerprints are kept (inside the git-ignored `targets/target`).
    pub fn stamp_dir(&self) -> PathBuf {
        self.root.join("target").join("loadlab-stamps")
    }

    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The target called `name`, or an error listing the known ones.
    pub fn target(&self, name: &str) -> Result<&Target, LabError> {
        self.targets
            .iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| LabError::UnknownTarget {
                name: name.to_string(),
                known: self.targets.iter().map(|t| t.name().to_string()).collect(),
            })
    }

    /// The names of the targets that declare `capability` (such as `http3`), in the lab's
    /// order: what a refusal of a target without it offers instead.
    pub fn with_capability(&self, capability: &str) -> Vec<&str> {
        self.targets
            .iter()
            .filter(|t| t.has(capability))
            .map(|t| t.name())
            .collect()
    }

    /// `NAME` as one target, or `all` as every target.
    pub fn select(&self, name: &str) -> Result<Vec<&Target>, LabError> {
        if name == "all" {
            Ok(self.targets.iter().collect())
        } else {
            Ok(vec![self.target(name)?])
        }
    }

    /// The build state of `target`.
    pub fn state(&self, target: &Target) -> Result<BuildState, LabError> {
        let missing = toolchain::missing(&target.manifest.toolchain);
        let built = !target.artifacts().is_empty() && target.artifacts().iter().all(|a| a.exists());
        if !built {
            return Ok(if missing.is_empty() {
                BuildState::NotBuilt
            } else {
                BuildState::ToolchainMissing(missing)
            });
        }
        let current = fingerprint::of(target)?;
        Ok(if self.stamp(target).as_deref() == Some(current.as_str()) {
            BuildState::Built
        } else {
            BuildState::Stale
        })
    }

    /// Every target with its state, sorted by name.
    pub fn list(&self) -> Result<Vec<TargetStatus>, LabError> {
        self.targets
            .iter()
            .map(|t| {
                Ok(TargetStatus {
                    name: t.name().to_string(),
                    language: t.manifest.language.clone(),
                    framework: t.manifest.framework.clone(),
                    framework_version: t.manifest.framework_version.clone(),
                    warmup_secs: t.manifest.warmup_secs,
                    capabilities: t.manifest.capabilities.clone(),
                    state: self.state(t)?,
                })
            })
            .chain(self.unavailable.iter().map(|u| {
                Ok(TargetStatus {
                    name: u.name.clone(),
                    language: u.language.clone(),
                    framework: u.framework.clone(),
                    framework_version: "-".into(),
                    warmup_secs: 0,
                    capabilities: Vec::new(),
                    state: BuildState::Unavailable(format!("{}: needs {}", u.post, u.needs)),
                })
            }))
            .collect()
    }

    fn stamp_path(&self, target: &Target) -> PathBuf {
        self.stamp_dir()
            .join(format!("{}.fingerprint", target.name()))
    }

    /// The fingerprint recorded by the last successful build.
    pub(crate) fn stamp(&self, target: &Target) -> Option<String> {
        std::fs::read_to_string(self.stamp_path(target))
            .ok()
            .map(|s| s.trim().to_string())
    }

    pub(crate) fn write_stamp(&self, target: &Target, fingerprint: &str) -> Result<(), LabError> {
        let path = self.stamp_path(target);
        let io = |source| LabError::Io {
            context: format!(
                "cannot record the build of {} in {}",
                target.name(),
                path.display()
            ),
            source,
        };
        std::fs::create_dir_all(self.stamp_dir()).map_err(io)?;
        std::fs::write(&path, fingerprint).map_err(io)
    }
}
