//! Experiment files: TOML as people write it (`raw`, every field checked by name)
//! becomes a validated [`Experiment`] whose every value the planner can trust. A rejection
//! names the key, what was wrong and how to fix it. No I/O beyond reading the file: targets
//! are checked by the runner, when it verifies them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

mod metrics;
mod raw;
mod server;
mod settings;
mod validate;

pub use metrics::MetricsFile;
pub use server::AgentRef;
pub use settings::{Axis, Bandwidth, Protocol, Settings, WsSettings};

/// A file that cannot become an experiment. `Display` names the key and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct FileError {
    pub file: String,
    pub message: String,
}

/// Where a variant's server comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A lab target, launched (and verified) by loadlab.
    Target(String),
    /// A server already running; loadlab only loads it.
    Url(String),
    /// Any command, launched by loadlab (`$PORT` / `{port}`).
    Exec(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub source: Source,
    /// Paths of this variant's own, in place of the file's.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// A scenario of this variant's own, in place of the file's requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub env: BTreeMap<String, String>,
    pub cpus: Option<f64>,
    pub memory: Option<String>,
    pub pin: Option<String>,
    pub healthz: Option<String>,
    /// The variant's own caps.
    #[serde(default, skip_serializing_if = "Bandwidth::is_empty")]
    pub bandwidth: Bandwidth,
    /// A lab target's recommended warm-up (`warmup_secs` in its manifest), in place of the
    /// file's default, when the file sets no `warmup` of its own (see [`crate::warmup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_warmup_s: Option<f64>,
    /// The server's host is another machine, reached through its agent (absent: this one;
    /// kept out of the plan's hash then, so plans from before it resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRef>,
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub repetitions: usize,
    pub seed: u64,
    pub cooldown_s: f64,
    pub upstream: bool,
    pub base: Settings,
    pub axes: Vec<Axis>,
    pub variants: Vec<Variant>,
    /// Index of the control variant (the first unless `[compare] control` names another).
    pub control: usize,
    pub margin: f64,
    /// The file (or `--warmup`) set the warm-up: a target's recommended one does not apply.
    /// Not stored: what it decided is in each variant's `target_warmup_s`.
    #[serde(skip)]
    pub warmup_given: bool,
    /// `[metrics]`: what every run scrapes and sends (not stored, not in the plan's hash).
    #[serde(skip)]
    pub metrics: MetricsFile,
    /// `[load] generators`: the fleet every run's load comes from, as `--generators` names
    /// one (a file or an inventory relative to the experiment file; ansible:INVENTORY[:GROUP];
    /// k8s:[NAMESPACE/]NAME), as written; not in the plan's hash (where the load
    /// comes from is not what is compared).
    #[serde(skip)]
    pub generators: Option<String>,
    /// `[load] cacert`: the CAs (a PEM file, relative to the experiment file) that
    /// `https://` variants' certificates chain to, as `--cacert`; absent: the built-in web
    /// roots. Not in the plan's hash (how the server is trusted is not what is compared).
    #[serde(skip)]
    pub cacert: Option<String>,
}

/// Runs per arm when the file does not say: enough for 95% confidence with room to spare
/// (4 per arm is the least that can reach it).
pub const DEFAULT_REPETITIONS: usize = 5;

pub fn duration_s(raw: &str, key: &str) -> Result<f64, String> {
    let raw = raw.trim();
    let d = match raw.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
        _ => humantime::parse_duration(raw)
            .map_err(|_| format!("{key}: {raw:?} is not a duration; write e.g. 10s, 500ms, 2m"))?,
    };
    if d > Duration::from_secs(24 * 3_600) {
        return Err(format!("{key}: {raw:?} is longer than a day; shorten it"));
    }
    Ok(d.as_secs_f64())
}

impl Experiment {
    pub fn load(path: &Path) -> Result<Experiment, FileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FileError {
            file: file.clone(),
            message: format!("cannot read it ({e}); check the path"),
        })?;
        let mut experiment =
            Experiment::parse(&text).map_err(|message| FileError { file, message })?;
        // Scenario files are named relative to the experiment file.
        let dir = path.parent().unwrap_or(Path::new("."));
        let resolve = |s: &mut Option<String>| {
            if let Some(p) = s.as_mut().filter(|p| Path::new(p.as_str()).is_relative()) {
                *p = dir.join(&*p).display().to_string();
            }
        };
        resolve(&mut experiment.base.scenario);
        resolve(&mut experiment.cacert);
        resolve(&mut experiment.metrics.cacert);
        resolve(&mut experiment.metrics.token_file);
        // `generators` is resolved where it is read: it may be ansible:INVENTORY, k8s:NAME.
        for v in &mut experiment.variants {
            resolve(&mut v.scenario);
            if let Some(a) = v.agent.as_mut() {
                let mut token = Some(std::mem::take(&mut a.token_file));
                resolve(&mut token);
                a.token_file = token.unwrap_or_default();
                resolve(&mut a.cacert);
            }
        }
        Ok(experiment)
    }

    pub fn parse(text: &str) -> Result<Experiment, String> {
        let raw: raw::RawExperiment = toml::from_str(text).map_err(|e| e.to_string())?;
        raw.validate()
    }

    /// Every protocol some arm speaks: the `[load]` one, or the `[matrix] protocol` values
    /// that replace it. Variants do not set their own, so every variant speaks all of them.
    pub fn protocols(&self) -> Vec<Protocol> {
        validate::protocols(self.base.protocol, &self.axes)
    }
}
