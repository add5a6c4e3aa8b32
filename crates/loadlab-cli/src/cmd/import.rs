//! `loadlab import postman|har|curl`: reads the source, hands its text to `loadlab-import`,
//! writes the scenario file atomically (or to standard output without `-o`) and prints the
//! report of what was not carried over to standard error. Malformed input is an error naming
//! the item and the field, exit code 2, and no file is written.

use crate::output;
use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use loadlab_import::{har, postman, Imported};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Turn a Postman collection, a HAR recording or a curl command into a scenario file",
    after_help = "The scenario file (docs/scenario-format.md) starts with comments saying where \
                  it came from and what could not be carried over; the same report is printed \
                  to standard error. Nothing is sent anywhere: run the file with \
                  `loadlab run --scenario FILE`. Exit codes: 0 imported; 2 bad input (not \
                  JSON, a format version loadlab does not read, a request without a URL, an \
                  unknown {{VARIABLE}}), named with its item and field.\n\n\
                  Examples:\n  \
                  loadlab import postman collection.json --environment staging.json -o scenarios/journeys/shop.toml\n  \
                  loadlab import har recording.har --pages -o scenarios/journeys/checkout.toml\n  \
                  loadlab import curl \"curl 'https://api.example.com/items' -H 'accept: application/json'\""
)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub source: SourceArgs,
}

#[derive(Debug, Subcommand)]
pub enum SourceArgs {
    /// A Postman collection (format v2.1 or v2.0), with its environment if given.
    Postman(PostmanArgs),
    /// A browser recording (HAR 1.2 or 1.1, from Chrome's or Firefox's network panel).
    Har(HarArgs),
    /// One curl command, as a browser's "Copy as cURL" gives it (bash quoting).
    Curl(CurlArgs),
}

/// Where the scenario goes, and variables to set in it.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the scenario here (replacing the file whole); without it, to standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Set a variable's default in the scenario (repeatable); overrides the source's value.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PostmanArgs {
    /// The collection's JSON export.
    #[arg(value_name = "COLLECTION.json")]
    pub collection: PathBuf,

    /// A Postman environment export: its values override the collection's variables.
    #[arg(short = 'e', long, value_name = "ENV.json")]
    pub environment: Option<PathBuf>,

    /// Keep the values of the environment's secret variables (left empty otherwise).
    #[arg(long)]
    pub keep_secrets: bool,

    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ThinkArg {
    /// The gaps between requests, as recorded.
    Recorded,
    /// No think time.
    None,
}

#[derive(Debug, Args)]
pub struct HarArgs {
    /// The recording.
    #[arg(value_name = "RECORDING.har")]
    pub recording: PathBuf,

    /// Keep static assets (scripts, styles, images, fonts), dropped otherwise.
    #[arg(long)]
    pub keep_assets: bool,

    /// Keep the requests to this host instead [default: the first document's host]. One
    /// host: a scenario runs against one origin.
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,

    /// Think times between steps.
    #[arg(long, value_enum, default_value = "recorded")]
    pub think: ThinkArg,

    /// Keep recorded cookies, Authorization and other secret headers as they were.
    #[arg(long)]
    pub keep_secrets: bool,

    /// Each page's requests (HAR pageref) as one step, fetched together.
    #[arg(long)]
    pub pages: bool,

    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub struct CurlArgs {
    /// The command, quoted as one argument ("curl 'https://...' -H '...'"), or `-` to read it
    /// from standard input.
    #[arg(value_name = "COMMAND", allow_hyphen_values = true)]
    pub command: String,

    /// The scenario's name [default: curl].
    #[arg(long)]
    pub name: Option<String>,

    #[command(flatten)]
    pub out: OutputArgs,
}

pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let (imported, out) = match args.source {
        SourceArgs::Postman(a) => {
            let vars = vars(&a.out.vars)?;
            check_output(&a.out)?;
            let environment = match &a.environment {
                Some(p) => Some((read(p, "environment")?, label(p))),
                None => None,
            };
            let options = postman::Options {
                label: label(&a.collection),
                environment,
                vars,
                keep_secrets: a.keep_secrets,
            };
            (
                postman::import(&read(&a.collection, "collection")?, &options)?,
                a.out,
            )
        }
        SourceArgs::Har(a) => {
            let vars = vars(&a.out.vars)?;
            check_output(&a.out)?;
            let options = har::Options {
                label: label(&a.recording),
                keep_assets: a.keep_assets,
                host: a.host.clone(),
                think: match a.think {
                    ThinkArg::Recorded => har::Think::Recorded,
                    ThinkArg::None => har::Think::None,
                },
                keep_secrets: a.keep_secrets,
                pages: a.pages,
                vars,
            };
            (
                har::import(&read(&a.recording, "recording")?, &options)?,
                a.out,
            )
        }
        SourceArgs::Curl(a) => {
            let vars = vars(&a.out.vars)?;
            check_output(&a.out)?;
            let command = if a.command == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .context("cannot read the curl command from standard input")?;
                text
            } else {
                a.command.clone()
            };
            let options = loadlab_import::curl::Options {
                name: a.name.clone(),
                vars,
            };
            (loadlab_import::curl::import(&command, &options)?, a.out)
        }
    };
    write(&imported, out.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn vars(raw: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    Ok(raw
        .iter()
        .map(|v| loadlab_import::parse_var(v))
        .collect::<Result<_, _>>()?)
}

fn check_output(out: &OutputArgs) -> anyhow::Result<()> {
    match &out.output {
        Some(path) => output::check_writable(path, "-o/--output"),
        None => Ok(()),
    }
}

fn read(path: &Path, what: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the {what} {}", path.display()))
}

fn label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The scenario to its file (or standard output), the report to standard error.
fn write(imported: &Imported, output: Option<&Path>) -> anyhow::Result<()> {
    let steps = imported.scenario.steps.len();
    let vars = imported.scenario.variables.len();
    match output {
        Some(path) => {
            output::write_atomically(path, imported.toml.as_bytes())
                .with_context(|| format!("-o/--output: cannot write {}", path.display()))?;
            eprintln!(
                "imported {steps} step{} and {vars} variable{} to {}",
                plural(steps),
                plural(vars),
                path.display()
            );
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(imported.toml.as_bytes())?;
            stdout.flush()?;
            eprintln!(
                "imported {steps} step{} and {vars} variable{}",
                plural(steps),
                plural(vars)
            );
        }
    }
    // The loader's word on the file as written: a file it names (a body, a form's file) is
    // looked for next to the scenario, and must be copied there first.
    let loaded = match output {
        Some(path) => loadlab_scenario::Scenario::load(path, &[]).map(|_| ()),
        None => {
            loadlab_scenario::Scenario::from_toml_str(&imported.toml, Path::new(".")).map(|_| ())
        }
    };
    if let Err(e) = loaded {
        eprintln!("warning: `loadlab run --scenario` refuses the file as it is: {e}");
    }
    if imported.notes.is_empty() {
        eprintln!("everything was carried over");
    } else {
        eprintln!("not carried over, or carried over differently:");
        for note in &imported.notes {
            eprintln!("  - {note}");
        }
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
