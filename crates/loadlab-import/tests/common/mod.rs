//! Shared by the importers' tests: fixtures, and reading the TOML they write back.

#![allow(dead_code)]

use std::path::PathBuf;

pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The written file, read back: loaded by the scenario loader (`loadlab run --scenario`'s),
/// with the files it names next to the fixtures, then as a TOML table to look into.
pub fn read_back(text: &str) -> toml::Table {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    if let Err(e) = loadlab_scenario::Scenario::from_toml_str(text, &dir) {
        panic!("the loader refuses it: {e}\n{text}");
    }
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
