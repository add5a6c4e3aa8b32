//! The importers' integration tests as one test binary (one link, not three): curl command
//! lines, HAR files and Postman collections (against the fixtures in `../fixtures`), and
//! imports of thousands of repeated names (`scale`). A file added here must not write to a
//! fixed path or depend on a global setting.

#[path = "../common/mod.rs"]
mod common;

mod curl;
mod har;
mod postman;
mod scale;
