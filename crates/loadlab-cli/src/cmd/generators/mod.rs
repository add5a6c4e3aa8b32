//! `--generators FILE`: where the load comes from, shared by `run`, `experiment`, `capacity`
//! and `sweep`. Absent: this machine. Given: a fleet of generators (each a `loadlab agent
//! --generator`), listed in a small TOML file; every run or probe is split across them.

use anyhow::Context as _;
use clap::Args;
use loadlab_session::fleet::Fleet;
use std::path::PathBuf;

#[derive(Debug, Args, Clone, Default)]
pub struct GeneratorArgs {
    /// Send the load from a fleet of generators instead of this machine: FILE lists them,
    /// one [[generator]] table each (url, token_file, fingerprint or cacert, as each `loadlab
    /// agent --generator` printed them). Every run or probe is split across them as --shard
    /// splits it, started at one instant, read live and merged exactly; a lost generator is
    /// named and its run marked partial. See docs/distributed.md.
    #[arg(long, value_name = "FILE", help_heading = "Where the load comes from")]
    pub generators: Option<PathBuf>,
}

impl GeneratorArgs {
    /// The fleet the flag names, read and checked (every generator answers and may send
    /// load); `None` without the flag.
    pub fn fleet(&self) -> anyhow::Result<Option<Fleet>> {
        let Some(path) = &self.generators else {
            return Ok(None);
        };
        read_fleet(path).map(Some)
    }
}

/// Reads and parses a fleet file; paths in it are relative to its directory.
pub fn read_fleet(path: &std::path::Path) -> anyhow::Result<Fleet> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --generators {}", path.display()))?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    Ok(Fleet::parse(&text, dir)?)
}

/// Puts the fleet on a prepared session and says who sends the load (unless `quiet`).
pub fn apply(
    fleet: Option<Fleet>,
    session: &mut loadlab_session::Session,
    quiet: bool,
) -> anyhow::Result<()> {
    let Some(fleet) = fleet else {
        return Ok(());
    };
    let notes = fleet.check(session.config().connections)?;
    if !quiet {
        eprintln!(
            "the load comes from {} generators, each its shard, started together:",
            fleet.generators.len()
        );
        for note in notes {
            eprintln!("  {note}");
        }
    }
    session.set_fleet(fleet);
    Ok(())
}
