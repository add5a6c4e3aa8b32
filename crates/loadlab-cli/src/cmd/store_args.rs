//! The results store's flags, declared once: `--db` for every command that reads or writes
//! the store ([`DbArgs`]), and `--save`/`--no-save`/`--tag` for the commands that keep what
//! they measure ([`StoreArgs`]: run, merge, recover, dist, capacity and sweep). One meaning each: `--tag` is
//! always the name the kept runs are found by (`loadlab runs list --tag`, `loadlab compare
//! TAG ...`), and giving it keeps them. Only flags here; the store itself is `runs`'s.

use clap::Args;
use std::path::PathBuf;

/// Where the results store is.
#[derive(Debug, Clone, Default, Args)]
pub struct DbArgs {
    /// The results store [default: $LOADLAB_DB, or loadlab.db here].
    // Global so that `loadlab runs list --db F` reads it after the subcommand too; a
    // command without subcommands is not changed by it.
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// The store's file (`--db`, else `$LOADLAB_DB`, else `loadlab.db` here).
    pub fn path(&self) -> PathBuf {
        crate::cmd::runs::db_path(self.db.as_deref())
    }

    /// Opens the store (sealing the runs killed while they were written).
    pub fn open(&self) -> anyhow::Result<loadlab_store::Store> {
        crate::cmd::runs::open_store(self.db.as_deref())
    }
}

/// Whether, where and under which tag a command keeps what it measured.
#[derive(Debug, Clone, Default, Args)]
pub struct StoreArgs {
    /// Keep the runs in the results store (see `loadlab runs`): `run`, `merge`, `recover`
    /// and `dist` keep nothing without it (or --tag); `capacity` and `sweep` keep every probe
    /// unless --no-save.
    #[arg(long, overrides_with = "no_save")]
    pub save: bool,

    /// Keep nothing in the results store.
    #[arg(long, overrides_with = "save", conflicts_with = "tag")]
    pub no_save: bool,

    /// The tag the kept runs are found by later (`loadlab runs list --tag NAME`, `loadlab
    /// compare NAME OTHER`); implies --save [default: capacity or sweep for their probes,
    /// none for the others].
    #[arg(long, value_name = "NAME")]
    pub tag: Option<String>,

    #[command(flatten)]
    pub db: DbArgs,
}

impl StoreArgs {
    /// Whether to keep the runs, when the command keeps them `by_default` or not.
    pub fn saving(&self, by_default: bool) -> bool {
        !self.no_save && (self.save || self.tag.is_some() || by_default)
    }

    /// The store, opened, when the runs are kept; checked before anything starts.
    pub fn open_if_saving(&self, by_default: bool) -> anyhow::Result<Option<loadlab_store::Store>> {
        if self.saving(by_default) {
            Ok(Some(self.db.open()?))
        } else {
            Ok(None)
        }
    }
}
