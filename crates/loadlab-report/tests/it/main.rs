//! The report crate's integration tests as one test binary (one link, not four): text, Markdown
//! and CSV exports against insta snapshots (`snapshots/`, named `it__FILE__TEST`), partial
//! intervals, and the HTML report in a real browser. A file added here must not use a fixed
//! port, a fixed name in /tmp or a global setting.

#[path = "../support/mod.rs"]
mod support;

mod browser;
mod exports;
mod partial_interval;
mod text;
