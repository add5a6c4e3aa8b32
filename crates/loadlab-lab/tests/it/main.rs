//! loadlab-lab's integration tests, in one binary (so the four reference targets are built
//! once per run, cached in `targets/target`). The tests that need built targets build them
//! through `Lab::build`, exactly as `loadlab lab build all` does; the first run in CI is a
//! cold build.

mod broken;
mod builds;
mod support;
mod targets;
mod tls;
