//! Shared by the importers' tests: fixtures, and reading the TOML they write back.

#![allow(dead_code)]

use std::path::PathBuf;

pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The written file, read back by a TOML parser: what the loader will see.
pub fn read_back(text: &str) -> toml::Table {
    text.parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("not valid TOML: {e}\n{text}"))
}

pub fn steps(doc: &toml::Table) -> Vec<toml::Table> {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s.as_table().expect("a step table").clone())
        .collect()
}

pub fn str_at<'a>(t: &'a toml::Table, path: &[&str]) -> Option<&'a str> {
    let mut v: &toml::Value = t.get(path[0])?;
    for key in &path[1..] {
        v = v.get(key)?;
    }
    v.as_str()
}
