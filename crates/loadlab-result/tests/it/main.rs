//! The result types' integration tests as one test binary (one link, not two): merging runs
//! and shards exactly. A file added here must not depend on a global setting.

mod merge;
mod shards;
