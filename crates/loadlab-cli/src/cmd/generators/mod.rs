//! `--generators`: where the load comes from, shared by `run`, `experiment`, `capacity`,
//! `sweep` and `doctor`. Absent: this machine. Given: a fleet of generators (each a `loadlab
//! agent --generator`), listed in a small TOML file (here), read back from the Ansible
//! playbook that starts them on an inventory's hosts (`ansible`), or found in a Kubernetes
//! cluster where `loadlab dist k8s --agents` put them (`k8s`). Every run or probe is split
//! across them.

mod ansible;
mod ansible_said;
mod k8s;
pub mod path;

use anyhow::Context as _;
use clap::Args;
use loadlab_session::fleet::{Fleet, FleetSource};
use std::path::Path;

#[derive(Debug, Args, Clone, Default)]
pub struct GeneratorArgs {
    /// Send the load from a fleet of generators instead of this machine. FLEET is a file
    /// listing them, one [[generator]] table each (url, token_file, fingerprint or cacert, as
    /// each `loadlab agent --generator` printed them); or ansible:INVENTORY[:GROUP], whose
    /// hosts get a generator agent from the playbook unless they run one; or
    /// k8s:[NAMESPACE/]NAME, the agents `loadlab dist k8s --agents --name NAME` wrote. Every
    /// run or probe is split across them as --shard splits it, started at one instant, read
    /// live and merged exactly; a lost generator is named and its run marked partial. See
    /// docs/distributed.md.
    #[arg(
        long,
        value_name = "FLEET",
        value_parser = parse_source,
        help_heading = "Where the load comes from"
    )]
    pub generators: Option<FleetSource>,
    /// With --generators k8s:...: leave out the agents' pods that are not Ready (each named)
    /// and split the load over the others, instead of refusing to start.
    #[arg(
        long,
        requires = "generators",
        help_heading = "Where the load comes from"
    )]
    pub skip_unready: bool,
}

fn parse_source(s: &str) -> Result<FleetSource, String> {
    FleetSource::parse(s).map_err(|e| e.to_string())
}

impl GeneratorArgs {
    /// The fleet the flag names, read and checked (every generator answers and may send
    /// load); `None` without the flag.
    pub fn fleet(&self) -> anyhow::Result<Option<Fleet>> {
        self.generators
            .as_ref()
            .map(|source| read_with(source, self.skip_unready))
            .transpose()
    }
}

/// The fleet `source` names: a file read, a playbook run, or a cluster asked.
pub fn read(source: &FleetSource) -> anyhow::Result<Fleet> {
    read_with(source, false)
}

/// [`read`], leaving out a cluster's agents that are not Ready when `skip_unready`.
fn read_with(source: &FleetSource, skip_unready: bool) -> anyhow::Result<Fleet> {
    match source {
        FleetSource::File(path) => read_fleet(path),
        FleetSource::Ansible { inventory, group } => ansible::fleet(inventory, group.as_deref()),
        FleetSource::Kubernetes { name, namespace } => {
            k8s::fleet(name, namespace.as_deref(), skip_unready)
        }
    }
}

/// Reads and parses a fleet file; paths in it are relative to its directory.
fn read_fleet(path: &Path) -> anyhow::Result<Fleet> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --generators {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    Ok(Fleet::parse(&text, dir)?)
}

/// Puts the fleet on a prepared session and says who sends the load (unless `quiet`).
pub fn apply(
    fleet: Option<Fleet>,
    session: &mut loadlab_session::Session,
    quiet: bool,
) -> anyhow::Result<Option<loadlab_result::path::PathCheck>> {
    let Some(fleet) = fleet else {
        return Ok(None);
    };
    crate::live::follow::generators(&fleet);
    let config = session.config();
    let check = fleet.check(config.connections, Some(config.url.port))?;
    if !quiet {
        eprintln!(
            "the load comes from {} generators, each its shard, started together:",
            fleet.generators.len()
        );
        for note in check.notes {
            eprintln!("  {note}");
        }
    }
    for warning in check.warnings {
        eprintln!("warning: {warning}");
    }
    // With the server's agent, each generator's path to it is measured before any load
    // (and the session puts what it found on every run's result).
    let paths = session.check_paths(&fleet).cloned();
    if let Some(paths) = &paths {
        path::print(paths, quiet);
    }
    session.set_fleet(fleet);
    Ok(paths)
}
