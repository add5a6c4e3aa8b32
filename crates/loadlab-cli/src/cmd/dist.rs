//! `loadlab dist`: one load as N shards on an engine that already exists. `k8s` writes an
//! Indexed Job and its plan (or, with `--agents`, generator agents for a fleet:
//! `dist_agents`); `collect` reads the shards' framed results back from their logs
//! (through `kubectl`, or from saved log files) and merges them; `ansible` runs the playbook
//! that copies loadlab to an inventory's hosts, starts the shards together, fetches their
//! results and merges them on the controller. The run flags are checked here, as `loadlab run`
//! would check them, before anything leaves this machine.

use crate::cmd::merge::{self, MergedOutput};
use crate::cmd::run::RunArgs;
use anyhow::Context as _;
use clap::{Args, Parser as _, Subcommand};
use loadlab_dist::k8s::{self, Spread};
use loadlab_result::RunResult;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct DistArgs {
    #[command(subcommand)]
    pub command: DistCommand,
}

#[derive(Debug, Subcommand)]
pub enum DistCommand {
    /// Write a Kubernetes Indexed Job (one pod per shard) and its plan, or with --agents a
    /// fleet of generator agents, as YAML on stdout.
    K8s(K8sArgs),
    /// Read the shards' results from their logs (kubectl, or saved files) and merge them.
    Collect(CollectArgs),
    /// Run the shards on an Ansible inventory's hosts, started together, and merge them.
    Ansible(AnsibleArgs),
    /// What each pod of a `dist k8s` Job runs: its shard of the plan, by its completion index.
    Pod(crate::cmd::dist_pod::PodArgs),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SpreadArg {
    /// Never two shards (or agents) on one node (with fewer nodes, the rest stay Pending).
    Required,
    /// Apart where the scheduler can.
    Preferred,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    loadlab dist k8s --shards 4 --image registry.example/loadlab:0.1 --rate 40000 -d 60s \\\n    \
    --start-at 2026-05-01T12:00:00Z http://api.internal:8080/ > loadtest.yaml\n  \
    kubectl apply -f loadtest.yaml\n  \
    kubectl wait --for=condition=complete --timeout=10m job/loadlab\n  \
    loadlab dist collect --k8s loadlab -o run.json\n\n  \
    loadlab dist k8s --agents --replicas 4 --name loadgen \\\n    \
    --image registry.example/loadlab:0.1 > agents.yaml\n  \
    kubectl apply -f agents.yaml && kubectl rollout status statefulset/loadgen\n  \
    loadlab capacity --generators k8s:loadgen --slo 'p99<100ms' http://api.internal:8080/")]
pub struct K8sArgs {
    /// How many shards (pods), each running its share of the load.
    #[arg(
        long,
        value_parser = clap::value_parser!(u32).range(1..=10_000),
        required_unless_present = "agents",
        conflicts_with = "agents"
    )]
    pub shards: Option<u32>,
    /// Write generator agents instead of a Job: a StatefulSet of `loadlab agent --generator`
    /// pods, their headless Service and a Secret with a new token. Runs, experiments and
    /// capacity searches then send their load from them with --generators k8s:NAME.
    #[arg(long, requires = "replicas")]
    pub agents: bool,
    /// How many agents (with --agents); change it later with `kubectl scale statefulset NAME
    /// --replicas N`.
    #[arg(
        long,
        requires = "agents",
        value_parser = clap::value_parser!(u32).range(1..=loadlab_session::fleet::MAX_GENERATORS as i64)
    )]
    pub replicas: Option<u32>,
    /// The Job's name (its ConfigMap is NAME-plan), or the agents' (their Secret is
    /// NAME-token).
    #[arg(long, default_value = "loadlab")]
    pub name: String,
    /// The namespace to put them in [default: kubectl's].
    #[arg(long)]
    pub namespace: Option<String>,
    /// The container image with loadlab on its PATH (deploy/Dockerfile builds one).
    #[arg(long, default_value = "loadlab:latest")]
    pub image: String,
    /// CPU per shard or agent (request and limit), e.g. 2 or 1500m.
    #[arg(long, default_value = "2")]
    pub cpu: String,
    /// Memory per shard or agent (request and limit), e.g. 1Gi.
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// How strictly shards (or agents) keep off each other's nodes.
    #[arg(long, value_enum, default_value = "required")]
    pub spread: SpreadArg,
    /// The run's flags and URL, as for `loadlab run` (`--start-at` included; not --shard).
    /// Not with --agents: each run then names its own load.
    #[arg(
        required_unless_present = "agents",
        conflicts_with = "agents",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN FLAGS... URL"
    )]
    pub run: Vec<String>,
}

impl SpreadArg {
    pub fn spread(self) -> Spread {
        match self {
            SpreadArg::Required => Spread::Required,
            SpreadArg::Preferred => Spread::Preferred,
        }
    }
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// The Job whose pods' logs hold the results (`kubectl logs`, by its job-name label).
    #[arg(long, value_name = "JOB", required_unless_present = "from_logs")]
    pub k8s: Option<String>,
    /// The Job's namespace [default: kubectl's].
    #[arg(short = 'n', long, requires = "k8s")]
    pub namespace: Option<String>,
    /// Read these saved logs instead of asking kubectl.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "k8s")]
    pub from_logs: Vec<PathBuf>,
    #[command(flatten)]
    pub out: MergedOutput,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Give --fail-if, --save and -o before the run flags: they apply to \
    the merged result.\n\nExample:\n  \
    loadlab dist ansible --inventory hosts.ini -o run.json --rate 15000 -d 30s http://10.0.0.5:8080/"
)]
pub struct AnsibleArgs {
    /// The Ansible inventory of the load generators.
    #[arg(long, value_name = "FILE")]
    pub inventory: PathBuf,
    /// Which of its hosts (an inventory pattern).
    #[arg(long, default_value = "all")]
    pub hosts: String,
    /// Where the shards' results land on this machine.
    #[arg(long, value_name = "DIR", default_value = "loadlab-results")]
    pub results_dir: PathBuf,
    /// The common start is this long after the binary reached every host.
    #[arg(long, value_parser = crate::cmd::run::parse_duration, default_value = "5s")]
    pub start_delay: Duration,
    /// The loadlab binary to copy to the hosts [default: this one].
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// The playbook [default: the one built in, as in deploy/ansible/loadlab.yml].
    #[arg(long, value_name = "FILE")]
    pub playbook: Option<PathBuf>,
    /// The ansible-playbook program [default: $LOADLAB_ANSIBLE_PLAYBOOK, or ansible-playbook
    /// on the PATH].
    #[arg(long, value_name = "PATH")]
    pub ansible_playbook: Option<PathBuf>,
    #[command(flatten)]
    pub out: MergedOutput,
    /// The run's flags and URL, as for `loadlab run` (not --shard, --start-at or --json).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "RUN FLAGS... URL"
    )]
    pub run: Vec<String>,
}

pub fn run(args: DistArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        DistCommand::K8s(a) if a.agents => crate::cmd::dist_agents::manifests(a),
        DistCommand::K8s(a) => k8s_manifests(a),
        DistCommand::Collect(a) => collect(a),
        DistCommand::Ansible(a) => ansible(a),
        DistCommand::Pod(a) => crate::cmd::dist_pod::pod(a),
    }
}

/// Parses the run flags as `loadlab run` would, refuses those the shards' engine sets or
/// that make no sense on N machines, and validates the plan as shard N of `shards` would
/// (the smallest share). The spec is not kept: the shards build their own from the flags.
fn check_run_flags(raw: &[String], shards: u32, engine_sets: &[&str]) -> anyhow::Result<RunArgs> {
    let given = |flag: &str| {
        raw.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    for flag in engine_sets {
        if given(flag) {
            anyhow::bail!("{flag} is set for each shard by `loadlab dist`; leave it out");
        }
    }
    // Parsed as the last shard's command line: `--start-at` needs a `--shard` beside it.
    let last = format!("{shards}/{shards}");
    let argv = ["loadlab", "run", "--shard", &last]
        .into_iter()
        .map(String::from)
        .chain(raw.iter().cloned());
    let args = match crate::cli::Cli::try_parse_from(argv) {
        Ok(cli) => match cli.command {
            crate::cli::Command::Run(args) => *args,
            _ => unreachable!("parsed as run"),
        },
        Err(e) => anyhow::bail!("the run flags: {}", e.to_string().trim()),
    };
    for flag in [
        "--save",
        "--no-save",
        "--tag",
        "--db",
        "--report",
        "--hdr-log",
        "--fail-if",
        "--junit",
    ] {
        if given(flag) {
            anyhow::bail!(
                "{flag} among the run flags would act on each shard alone; give it before them, \
                 to `loadlab dist` (it applies to the merged result), or drop it"
            );
        }
    }
    if let Some(server) = args.server.spec()? {
        // Through an agent, shard 1 alone watches the server (`run --shard` skips it on the
        // others); launching would still start one per run, so only watching is allowed.
        if server.agent.is_none() || server.launches() {
            anyhow::bail!(
                "--target, --exec, --pid and --cgroup would have every shard launch or watch a \
                 server of its own; start the service once and give its URL (with --agent and \
                 --pid, --cgroup, --port or --container, shard 1 watches it through its agent)"
            );
        }
    }
    if args.scenario.file.is_some() {
        anyhow::bail!(
            "--scenario: `loadlab dist` does not carry scenario files to other machines yet; \
             run `loadlab run --scenario FILE --shard I/N --start-at T` on each"
        );
    }
    // The spec `run` builds from these flags as the last shard (the smallest share).
    let spec = crate::cmd::run::session_spec(&args)?.run;
    spec.validate()
        .map_err(|c| anyhow::anyhow!("{}: {}", crate::cmd::run::flag_for(c.setting), c.message))?;
    Ok(args)
}

/// Points `flag`'s value at `to` in `raw` (as `--flag VALUE` or `--flag=VALUE`).
fn repoint(raw: &mut [String], flag: &str, to: &str) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == flag && i + 1 < raw.len() {
            raw[i + 1] = to.to_string();
            i += 1;
        } else if raw[i].starts_with(&format!("{flag}=")) {
            raw[i] = format!("{flag}={to}");
        }
        i += 1;
    }
}

fn k8s_manifests(a: K8sArgs) -> anyhow::Result<ExitCode> {
    let shards = a
        .shards
        .context("give --shards N (or --agents for a fleet)")?;
    let args = check_run_flags(&a.run, shards, &["--shard", "--framed", "--json"])?;
    if args.request.cert.is_some() || args.request.key.is_some() {
        anyhow::bail!(
            "--cert/--key: a client key belongs in a Secret, which `dist k8s` does not write \
             yet; mount one yourself and point --cert/--key at it in the pod"
        );
    }
    let mut raw = a.run.clone();
    let mut files = Vec::new();
    for (flag, path, key) in [
        ("--body-file", &args.request.body_file, "body"),
        ("--cacert", &args.request.cacert, "cacert.pem"),
    ] {
        if let Some(path) = path {
            let bytes = std::fs::read(path)
                .with_context(|| format!("{flag}: cannot read {}", path.display()))?;
            files.push((key.to_string(), bytes));
            repoint(&mut raw, flag, &format!("{}/{key}", k8s::PLAN_DIR));
        }
    }
    if raw.iter().any(|a| a.contains('\n')) {
        anyhow::bail!(
            "a run flag holds a line break, which the plan (one flag a line) cannot carry; put \
             a multi-line body in a file and give --body-file"
        );
    }
    let plan = k8s::Plan {
        name: a.name,
        namespace: a.namespace,
        image: a.image,
        shards,
        args: raw,
        files,
        cpu: a.cpu,
        memory: a.memory,
        spread: a.spread.spread(),
    };
    print!("{}", k8s::to_yaml(&k8s::manifests(&plan)));
    if args.shard.start_at.is_none() {
        eprintln!(
            "note: no --start-at: each shard starts when its pod does, and the merge reports the \
             spread; for one start, add --start-at a little after you expect every pod to run"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Results and notes from logs: every frame's result, and a note for each log without one
/// (or with one that does not read).
fn from_logs(logs: &[(String, String)]) -> (Vec<RunResult>, Vec<String>) {
    let (mut results, mut notes) = (Vec::new(), Vec::new());
    for (source, log) in logs {
        let frames = loadlab_dist::frame::read_frames(log);
        if frames.is_empty() {
            let last = log
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            notes.push(format!(
                "{source} printed no result{}",
                if last.is_empty() {
                    " (an empty log)".to_string()
                } else {
                    format!(" (its log ends: {})", last.trim())
                }
            ));
        }
        for f in frames {
            match f.result {
                Ok(r) => results.push(r),
                Err(why) => notes.push(format!(
                    "{source}, line {}{}: {why}",
                    f.line,
                    f.shard
                        .map_or(String::new(), |(i, n)| format!(" (shard {i}/{n})"))
                )),
            }
        }
    }
    (results, notes)
}

fn collect(a: CollectArgs) -> anyhow::Result<ExitCode> {
    a.out.check()?;
    let logs: Vec<(String, String)> = match &a.k8s {
        Some(job) => loadlab_dist::kubectl::job_logs(job, a.namespace.as_deref())?,
        None => a
            .from_logs
            .iter()
            .map(|p| {
                std::fs::read_to_string(p)
                    .with_context(|| format!("--from-logs: cannot read {}", p.display()))
                    .map(|log| (p.display().to_string(), log))
            })
            .collect::<anyhow::Result<_>>()?,
    };
    let (results, notes) = from_logs(&logs);
    if results.is_empty() {
        anyhow::bail!(
            "no shard result in {} log{}: {}",
            logs.len(),
            if logs.len() == 1 { "" } else { "s" },
            notes.join("; ")
        );
    }
    merge::finish(&results, notes, &a.out)
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

fn ansible(a: AnsibleArgs) -> anyhow::Result<ExitCode> {
    check_run_flags(&a.run, 1, &["--shard", "--start-at", "--framed", "--json"])?;
    a.out.check()?;
    let binary = match &a.binary {
        Some(b) => absolute(b)?,
        None => {
            std::env::current_exe().context("cannot find this loadlab binary; give --binary")?
        }
    };
    std::fs::create_dir_all(&a.results_dir)
        .with_context(|| format!("--results-dir: cannot create {}", a.results_dir.display()))?;
    let results_dir = absolute(&a.results_dir)?;
    let output = match a.out.output.as_deref() {
        Some(o) if o != "-" => absolute(Path::new(o))?,
        _ => results_dir.join("run.json"),
    };
    // A merged result left from an earlier run must not pass for this one's.
    let _ = std::fs::remove_file(&output);
    let work = std::env::temp_dir().join(format!("loadlab-ansible-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let playbook = match &a.playbook {
        Some(p) => absolute(p)?,
        None => {
            let p = work.join("loadlab.yml");
            std::fs::write(&p, loadlab_dist::ansible::PLAYBOOK)?;
            p
        }
    };
    let vars = loadlab_dist::ansible::extra_vars(&loadlab_dist::ansible::Vars {
        binary: &binary,
        args: &a.run,
        results_dir: &results_dir,
        output: &output,
        start_delay_s: a.start_delay.as_secs_f64(),
        hosts: &a.hosts,
        merge_args: &["-q".to_string()],
    });
    let vars_file = work.join("vars.json");
    std::fs::write(&vars_file, serde_json::to_vec_pretty(&vars)?)?;
    let program = crate::ansible::program(a.ansible_playbook.as_deref());
    let mut cmd = crate::ansible::command(&program, &a.inventory, &playbook, &vars_file);
    if !a.out.quiet {
        eprintln!(
            "running {} -i {} {}",
            program.display(),
            a.inventory.display(),
            playbook.display()
        );
    }
    let status = cmd
        .status()
        .map_err(|e| crate::ansible::cannot_run(&program, &e, "give --ansible-playbook PATH"))?;
    let _ = std::fs::remove_dir_all(&work);
    let text = std::fs::read_to_string(&output).with_context(|| {
        format!(
            "the playbook ({status}) left no merged result at {}",
            output.display()
        )
    })?;
    let merged: RunResult = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a loadlab result", output.display()))?;
    merge::present(merged, &a.out, false)
}
