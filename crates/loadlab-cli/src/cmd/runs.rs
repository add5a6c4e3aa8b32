//! The store glue the commands share: where the store is, saving a run with its environment,
//! an experiment's sink, reading an experiment's runs back by arm. The `loadlab runs` command
//! is `runs_command`; the store itself is `loadlab-store`.

use anyhow::Context as _;
use clap::Args;
use loadlab_engine::collector::IntervalSink;
use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::RunSink;
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use loadlab_session::spill::store_sink::{StoreSink, StreamedRun};
use loadlab_session::spill::stored;
use loadlab_store::{ExperimentId, ExperimentSlot, ExperimentStatus, RunId, RunMeta, Store};
use std::path::{Path, PathBuf};

/// The store's file: `--db`, else `$LOADLAB_DB`, else `loadlab.db` in the working directory.
pub fn db_path(db: Option<&Path>) -> PathBuf {
    db.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("LOADLAB_DB").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("loadlab.db"))
}

/// Opens the store, and seals the runs killed while they were written to it (their writer
/// gone) with the partial result their intervals make, saying so on stderr.
pub fn open_store(db: Option<&Path>) -> anyhow::Result<Store> {
    let store = Store::open(db_path(db))?;
    let done = loadlab_session::spill::stored::seal_orphans(&store)?;
    for id in done.sealed {
        eprintln!(
            "run {id} was killed while it was written: kept as an interrupted, partial result \
             up to its last interval written (loadlab runs show {id})"
        );
    }
    for (id, why) in done.failed {
        eprintln!(
            "run {id} was killed while it was written and could not be rebuilt ({why}); \
             `loadlab runs delete {id}` removes it"
        );
    }
    Ok(store)
}

/// Secrets out of a result before it reaches any file (the store applies the same rules).
pub fn redact(result: &mut RunResult) {
    loadlab_store::redact(result);
}

pub fn resolve(store: &Store, spec: &str) -> anyhow::Result<Vec<RunId>> {
    Ok(store.resolve(spec)?)
}

pub fn load(store: &Store, id: RunId) -> anyhow::Result<RunResult> {
    Ok(store.run(id)?.result)
}

/// What a stored run keeps about where it ran, beyond the result's own environment.
fn environment() -> serde_json::Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .ok()
    };
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    serde_json::json!({
        "loadlab_version": env!("CARGO_PKG_VERSION"),
        "git_commit": option_env!("LOADLAB_GIT_COMMIT"),
        "cpu_model": cpu_model,
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "kernel": read("/proc/sys/kernel/osrelease"),
    })
}

/// `--revision` and `--branch`, on the commands that save runs (run, experiment, capacity,
/// sweep): what the runs measured, for `loadlab history`.
#[derive(Debug, Clone, Default, Args)]
pub struct ProvenanceArgs {
    /// The revision (commit) of the code under test, kept with each saved run for `loadlab
    /// history` [default: $LOADLAB_REVISION, the CI's commit ($GITHUB_SHA, $CI_COMMIT_SHA,
    /// $BUILDKITE_COMMIT, $CIRCLE_SHA1, $GIT_COMMIT...), else `git rev-parse HEAD` here].
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,

    /// The branch that revision was built from [default: $LOADLAB_BRANCH, the CI's branch
    /// variable, else git's current branch].
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
}

/// The flags of this process's command. A process runs one command, and its runs are saved
/// deep inside run, capacity and experiment code: one place to set them beats threading
/// them through every saving call.
static PROVENANCE_FLAGS: std::sync::OnceLock<ProvenanceArgs> = std::sync::OnceLock::new();

/// Called by `dispatch` with the command's `--revision` and `--branch`, before it runs:
/// refused here, before any load, when one holds a control character.
pub fn set_provenance(args: &ProvenanceArgs) -> anyhow::Result<()> {
    use loadlab_history::provenance::check_flag;
    for (flag, value) in [("--revision", &args.revision), ("--branch", &args.branch)] {
        if let Some(value) = value {
            check_flag(flag, value).map_err(anyhow::Error::msg)?;
        }
    }
    let _ = PROVENANCE_FLAGS.set(args.clone());
    Ok(())
}

/// The revision and branch saved runs measured: resolved once, when the first run is saved.
fn provenance() -> &'static loadlab_history::provenance::Provenance {
    static RESOLVED: std::sync::OnceLock<loadlab_history::provenance::Provenance> =
        std::sync::OnceLock::new();
    RESOLVED.get_or_init(|| {
        let flags = PROVENANCE_FLAGS.get().cloned().unwrap_or_default();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| String::from_utf8(o.stdout).ok())
                .map(|s| s.trim().to_string())
        };
        loadlab_history::provenance::resolve(
            flags.revision.as_deref(),
            flags.branch.as_deref(),
            &|name| std::env::var(name).ok(),
            &git,
        )
    })
}

/// What the store keeps beside a run of `loadlab run --save` (or a capacity probe).
pub fn run_meta(tag: Option<&str>) -> RunMeta {
    let p = provenance();
    RunMeta {
        tag: tag.map(str::to_string),
        environment: Some(environment()),
        revision: p.revision.clone(),
        branch: p.branch.clone(),
        ..RunMeta::default()
    }
}

/// Saves one run of `loadlab run --save`.
pub fn save(store: &Store, result: &RunResult, tag: Option<&str>) -> anyhow::Result<RunId> {
    Ok(store.save_run(result, &run_meta(tag))?)
}

/// An experiment's runs going into the store as they end.
pub struct ExperimentSink<'a> {
    store: &'a Store,
    file: PathBuf,
    id: Option<ExperimentId>,
    /// The run going on, written to the store as it goes.
    streamed: Option<StreamedRun>,
}

impl<'a> ExperimentSink<'a> {
    pub fn new(store: &'a Store, file: &Path) -> ExperimentSink<'a> {
        ExperimentSink {
            store,
            file: file.to_path_buf(),
            id: None,
            streamed: None,
        }
    }

    pub fn experiment_id(&self) -> ExperimentId {
        self.id.expect("begun")
    }

    fn meta(&self, arm: &Arm, run: &PlannedRun) -> RunMeta {
        RunMeta {
            experiment: Some(ExperimentSlot {
                experiment: self.experiment_id(),
                variant: arm.label.clone(),
                block: run.block as u32,
                repetition: run.block as u32,
            }),
            config: serde_json::to_value(&arm.settings).ok(),
            environment: Some(environment()),
            revision: provenance().revision.clone(),
            branch: provenance().branch.clone(),
            ..RunMeta::default()
        }
    }
}

impl RunSink for ExperimentSink<'_> {
    fn begin(
        &mut self,
        experiment: &Experiment,
        plan: &Plan,
        resume: bool,
    ) -> Result<Vec<(String, usize)>, String> {
        let err = |e: loadlab_store::StoreError| e.to_string();
        if resume {
            match self
                .store
                .find_resumable(&experiment.name, &plan.hash)
                .map_err(err)?
            {
                Some(r) => {
                    self.id = Some(r.experiment);
                    self.store
                        .set_experiment_status(r.experiment, ExperimentStatus::Running)
                        .map_err(err)?;
                    return Ok(r
                        .completed
                        .into_iter()
                        .map(|c| (c.variant, c.block as usize))
                        .collect());
                }
                None => {
                    return Err(format!(
                        "--resume: no unfinished experiment `{}` with this plan ({}); the file \
                         or its seed changed, or it finished: run it without --resume",
                        experiment.name, plan.hash
                    ))
                }
            }
        }
        let plan_json = serde_json::to_value(experiment).map_err(|e| e.to_string())?;
        self.id = Some(
            self.store
                .create_experiment(&experiment.name, &self.file, &plan.hash, &plan_json)
                .map_err(err)?,
        );
        Ok(Vec::new())
    }

    fn stream(&mut self, arm: &Arm, run: &PlannedRun) -> Option<Box<dyn IntervalSink>> {
        let (sink, streamed) = StoreSink::new(self.store.path(), self.meta(arm, run));
        self.streamed = Some(streamed);
        Some(Box::new(sink))
    }

    fn save(&mut self, arm: &Arm, run: &PlannedRun, result: &RunResult) -> Result<(), String> {
        let meta = self.meta(arm, run);
        match self.streamed.take() {
            Some(streamed) => {
                let mut result = result.clone();
                stored::read_back(self.store, None, &streamed, &mut result);
                stored::save(self.store, &streamed, &result, &meta)
                    .map(|_| ())
                    .map_err(|e| format!("{e:#}"))
            }
            None => self
                .store
                .save_run(result, &meta)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    fn finish(&mut self, status: &str) -> Result<(), String> {
        let status = match status {
            "complete" => ExperimentStatus::Complete,
            _ => ExperimentStatus::Interrupted,
        };
        self.store
            .set_experiment_status(self.experiment_id(), status)
            .map_err(|e| e.to_string())
    }
}

/// An experiment's completed runs, by arm in plan order.
pub fn experiment_results(
    store: &Store,
    id: ExperimentId,
    plan: &Plan,
) -> anyhow::Result<Vec<Vec<RunResult>>> {
    let by_variant = store.experiment_runs(id)?;
    plan.arms
        .iter()
        .map(|arm| {
            by_variant.get(&arm.label).map_or(Ok(Vec::new()), |rows| {
                rows.iter()
                    .filter(|r| !r.interrupted)
                    .map(|r| Ok(store.run(r.id)?.result))
                    .collect()
            })
        })
        .collect()
}

/// How many of an experiment's runs were interrupted (stopped or killed): its statistics
/// leave them out, since they measured less than the plan asked.
pub fn interrupted_runs(store: &Store, id: ExperimentId) -> anyhow::Result<usize> {
    Ok(store
        .experiment_runs(id)?
        .values()
        .flatten()
        .filter(|r| r.interrupted)
        .count())
}

/// An experiment read back from the store.
pub struct StoredExperiment {
    pub experiment: Experiment,
    pub plan: Plan,
    /// Completed runs, by arm in plan order.
    pub by_arm: Vec<Vec<RunResult>>,
}

/// The latest experiment of that name, with its plan rebuilt and its runs by arm.
pub fn latest_experiment(store: &Store, name: &str) -> anyhow::Result<Option<StoredExperiment>> {
    let Some(stored) = store.latest_experiment(name)? else {
        return Ok(None);
    };
    read_experiment(store, &stored).map(Some)
}

/// A stored experiment with its plan rebuilt and its completed runs by arm.
pub fn read_experiment(
    store: &Store,
    stored: &loadlab_store::Experiment,
) -> anyhow::Result<StoredExperiment> {
    let name = &stored.name;
    let experiment: Experiment = serde_json::from_value(stored.plan.clone())
        .with_context(|| format!("experiment {name}: its stored plan does not read"))?;
    let plan = Plan::new(&experiment).map_err(anyhow::Error::msg)?;
    let by_arm = experiment_results(store, stored.id, &plan)?;
    Ok(StoredExperiment {
        experiment,
        plan,
        by_arm,
    })
}

/// A revision as git shortens a commit (12 hex digits); one that is not a commit hash whole.
pub fn short_revision(rev: &str) -> &str {
    if rev.len() > 12 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
        &rev[..12]
    } else {
        rev
    }
}
