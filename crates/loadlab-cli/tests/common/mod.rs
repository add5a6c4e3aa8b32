//! Helpers shared by the CLI's test files (not every file uses every one).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `loadlab` binary this package built.
pub fn loadlab() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// One test of the binary at a time, for the binaries whose tests measure the machine (CPU,
/// rates, links) or build network namespaces: taken first, held for the test. Each test
/// binary has its own lock.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fails with every violation when `value` does not follow `schema/run-result.schema.json`.
pub fn assert_valid(value: &serde_json::Value) {
    let text = include_str!("../../../../schema/run-result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema is valid");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:#?}"
    );
}

/// The cgroups a loadlab process (`pid`) made for the servers it launched (`loadlab-PID-N`),
/// in every hierarchy, a few levels down (v1 memory groups sit below the caller's own).
pub fn groups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if !path.is_dir() {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(path);
            } else if depth > 0 {
                walk(&path, prefix, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        Path::new("/sys/fs/cgroup"),
        &format!("loadlab-{pid}-"),
        4,
        &mut out,
    );
    out
}
