//! The store's integration tests, in one test binary (as ripgrep does): real SQLite files in
//! temporary directories, the report crate's real result fixtures, and a child process
//! killed in the middle of writing.

mod capacity;
mod crash;
mod experiments;
mod history;
mod migrate;
mod resolve;
mod roundtrip;
mod secrets;
mod stream;
mod support;
