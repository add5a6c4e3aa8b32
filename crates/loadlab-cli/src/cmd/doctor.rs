//! `loadlab doctor [run flags]`: checks this machine against the run those flags describe
//! (`loadlab doctor -c 10000 --no-keepalive`) and prints, for each check, PASS, WARN or
//! FAIL, what the machine has, what the run needs and the command that fixes it. The same
//! checks run before every `run` and `experiment`. Glue only: the session plans, the machine
//! crate reads and checks.

use crate::cmd::run::RunArgs;
use crate::output::Destination;
use clap::{ArgMatches, Args, Command, FromArgMatches};
use loadlab_result::{Check, CheckStatus};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

/// How long `doctor` samples CPU use (busy processes, steal): longer than before a run, where
/// the same checks take 200 ms.
const SAMPLE: Duration = Duration::from_millis(500);

/// `run`'s flags, the URL optional (without one, the target is unknown).
#[derive(Debug)]
pub struct DoctorArgs {
    pub run: RunArgs,
}

impl FromArgMatches for DoctorArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(DoctorArgs {
            run: RunArgs::from_arg_matches(matches)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.run.update_from_arg_matches(matches)
    }
}

impl Args for DoctorArgs {
    fn augment_args(cmd: Command) -> Command {
        adapt(RunArgs::augment_args(cmd))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        adapt(RunArgs::augment_args_for_update(cmd))
    }
}

fn adapt(cmd: Command) -> Command {
    // Run's URL is required unless --scenario is given; here it is optional outright, so the
    // argument is made anew rather than adjusted (clap cannot unset `required_unless_present`).
    cmd.mut_arg("url", |_| {
        clap::Arg::new("url")
            .value_name("URL")
            .required(false)
            .default_value("")
            .hide_default_value(true)
            .help("The URL the run would load (optional: without it the target is unknown)")
    })
    .mut_arg("json", |a| {
        a.help("Write the checks as JSON to this file (`-` for standard output)")
    })
    .mut_arg("strict", |a| a.help("Exit 1 on a WARN too, not only on a FAIL"))
    .about("Check this machine against the run these flags describe (the same checks run before every run)")
    .after_help(
        "Each check says PASS, WARN or FAIL, what the machine has, what the planned run needs, \
         and the command that fixes it. Exit codes: 0 nothing failed; 1 a check failed (with \
         --strict: or warned); 2 bad usage.\n\n\
         Examples:\n  \
         loadlab doctor -c 10000 --no-keepalive\n  \
         loadlab doctor --rate 20000 --no-keepalive http://127.0.0.1:8080/\n  \
         loadlab doctor --target rust-axum --pin 0 --cpus 0.5 -c 500 /plaintext\n  \
         loadlab doctor --json - -c 50",
    )
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let spec = crate::cmd::run::session_spec(&args.run)?;
    let json = args
        .run
        .json
        .as_deref()
        .map(|p| Destination::open(p, "--json"))
        .transpose()?;
    let plan = describe(&args.run);
    // Kept for the fleet's path check before the spec goes to the machine's checks.
    let server_agent = spec
        .server
        .as_ref()
        .and_then(|s| s.agent.as_ref())
        .map(|a| a.endpoint.clone());
    let path_config = spec.run.validate().ok();
    let checks =
        loadlab_session::machine::doctor(spec, SAMPLE).map_err(crate::cmd::run::flags_named)?;
    if let Some(dest) = &json {
        let text = serde_json::to_string_pretty(&checks)? + "\n";
        match dest {
            Destination::Stdout => {
                std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?
            }
            Destination::File(_, path) => crate::output::write_atomically(path, text.as_bytes())?,
        }
    }
    // With `--json -` the JSON alone goes to standard output, the text to standard error.
    if !args.run.quiet {
        match json {
            Some(Destination::Stdout) => eprint!("{}", render(&plan, &checks)),
            _ => print!("{}", render(&plan, &checks)),
        }
    }
    // With a fleet, the load comes from its hosts: each is asked (it answers, may send load,
    // and has room for its share of the connections); a host that cannot is a failure.
    // Its closed connections to the target's port still holding local ports (TIME_WAIT) and
    // its clock, compared with this one, are warnings (failures with --strict).
    let (mut fleet_failed, mut fleet_warned) = (false, false);
    if let Some(fleet) = args.run.generators.fleet()? {
        let connections = args.run.connections.unwrap_or(50);
        let target_port = args
            .run
            .url
            .as_deref()
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|u| u.port_or_known_default());
        match fleet.check(connections, target_port) {
            Ok(check) => {
                for note in check.notes {
                    eprintln!("PASS  {note}");
                }
                for warning in &check.warnings {
                    eprintln!("WARN  {warning}");
                }
                fleet_warned = !check.warnings.is_empty();
                // With the server's agent too: each generator's path to it, both ways.
                if let (Some(server), Some(config)) = (&server_agent, &path_config) {
                    let paths = loadlab_session::fleet::path::check(&fleet, server, config);
                    crate::cmd::generators::path::print(&paths, args.run.quiet);
                    fleet_warned |= paths.named().next().is_some();
                }
            }
            Err(e) => {
                eprintln!("FAIL  {e}");
                fleet_failed = true;
            }
        }
    }
    let worst = loadlab_machine::checks::worst(&checks);
    if fleet_failed || (args.run.strict && fleet_warned) {
        return Ok(ExitCode::from(1));
    }
    Ok(
        if worst == CheckStatus::Fail || (args.run.strict && worst == CheckStatus::Warn) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// The run checked against, in a few words.
fn describe(a: &RunArgs) -> String {
    let load = match (a.rate, &a.stages) {
        (Some(r), _) => format!("open loop at {r} requests/s"),
        (None, Some(s)) if !a.closed => format!("open loop, stages {s}"),
        _ => format!(
            "closed loop, {} connections",
            loadlab_machine::checks::thousands(
                a.connections
                    .unwrap_or(loadlab_engine::config::DEFAULT_CONNECTIONS) as u64
            )
        ),
    };
    format!(
        "{load}, {}{}",
        if a.request.no_keepalive {
            "a new connection per request"
        } else {
            "keep-alive"
        },
        match (&a.url, &a.scenario.file) {
            (Some(url), _) if !url.is_empty() => format!(", against {url}"),
            (_, Some(file)) => format!(", scenario {}", file.display()),
            _ => String::new(),
        }
    )
}

/// The checks for a terminal: one block per check, the fix under what failed.
pub fn render(plan: &str, checks: &[Check]) -> String {
    let mut s = format!("checked against: {plan}\n\n");
    for c in checks {
        let _ = writeln!(s, "{}  {:<15} {}", c.status.label(), c.name, c.found);
        if c.status != CheckStatus::Pass {
            let _ = writeln!(s, "      {:<15} needs {}", "", c.needs);
            if let Some(fix) = &c.fix {
                let _ = writeln!(s, "      {:<15} fix: {fix}", "");
            }
        }
    }
    let count = |st| checks.iter().filter(|c| c.status == st).count();
    let _ = writeln!(
        s,
        "\n{} FAIL, {} WARN, {} PASS",
        count(CheckStatus::Fail),
        count(CheckStatus::Warn),
        count(CheckStatus::Pass)
    );
    s
}
