//! `--scenario FILE` and its `--var`s: one group of flags shared by every command that drives
//! load (`run`, `capacity`, `sweep`), with what turns them into the run's scenario and URL,
//! so the commands read a scenario the same way.

use super::parse::parse_vars;
use super::RequestArgs;
use clap::Args;
use loadlab_engine::scenario::Scenario;
use loadlab_engine::RunSpec;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// Run a scenario file (docs/scenario-format.md): -c virtual users, each with its own
    /// connection and cookie jar, run its steps over and over; or with --rate (and in each
    /// probe of `capacity` and `sweep --rates`), that many iterations per second, each a new
    /// user, every step timed from when it was due. The result has a row per step.
    #[arg(
        id = "scenario",
        long = "scenario",
        value_name = "FILE",
        help_heading = "Scenarios"
    )]
    pub file: Option<PathBuf>,

    /// A scenario variable, NAME=VALUE, over the file's [variables] (repeat for more). Its
    /// value is never written to a result or the store.
    #[arg(
        long = "var",
        value_name = "NAME=VALUE",
        requires = "scenario",
        help_heading = "Scenarios"
    )]
    pub vars: Vec<String>,
}

impl ScenarioArgs {
    /// The scenario of `--scenario FILE` with its `--var`s, loaded and checked (none without
    /// `--scenario`).
    pub fn load(&self) -> anyhow::Result<Option<Arc<Scenario>>> {
        let Some(path) = &self.file else {
            return Ok(None);
        };
        let vars = parse_vars(&self.vars)?;
        // A file that is not there is named with the fix; what is wrong inside one, the
        // loader names (the step and the field).
        if let Err(e) = std::fs::metadata(path) {
            anyhow::bail!(
                "--scenario {}: cannot read it ({e}); check the path, or write one \
                 (docs/scenario-format.md, or `loadlab import` from a HAR, Postman or curl)",
                path.display()
            );
        }
        Ok(Some(Arc::new(Scenario::load(path, &vars)?)))
    }

    /// The spec of `request`'s flags with the scenario: against the URL given, else with a
    /// scenario the root of the server loadlab starts or watches (`with_server`), or none
    /// (the scenario names its URLs). The load's shape is the caller's.
    pub fn spec(
        &self,
        request: &RequestArgs,
        url: Option<&str>,
        with_server: bool,
    ) -> anyhow::Result<RunSpec> {
        let scenario = self.load()?;
        let url = match (url, &scenario) {
            (Some(url), _) => url.to_string(),
            // A launched server: the scenario's requests go to it.
            (None, Some(_)) if with_server => "/".to_string(),
            (None, Some(_)) => String::new(),
            (None, None) => {
                anyhow::bail!("give a URL to load, e.g. http://127.0.0.1:8080/, or --scenario FILE")
            }
        };
        Ok(RunSpec {
            scenario,
            ..request.spec(&url)?
        })
    }
}
