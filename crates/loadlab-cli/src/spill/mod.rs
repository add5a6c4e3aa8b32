//! The CLI's side of a run's timeline written as it goes: where it goes for `loadlab run`
//! ([`run`]: a spill file, or the results store with `--save`) and the spill files killed
//! runs left ([`orphans`]). The format, the store's sink and the recovery are
//! `loadlab_session::spill`'s, shared with experiments and capacity.

pub mod orphans;
pub mod run;

pub use loadlab_session::spill::*;
