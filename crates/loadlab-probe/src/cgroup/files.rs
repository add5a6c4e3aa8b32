//! Reading the kernel's cgroup files: a number, a `name value` field.

use std::path::PathBuf;

pub(super) fn read_text(path: PathBuf) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

pub(super) fn read_u64(path: PathBuf) -> Option<u64> {
    read_text(path)?.trim().parse().ok()
}

pub(super) fn field_in(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (key, value) = l.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
}

pub(super) fn stat_field(path: PathBuf, name: &str) -> Option<u64> {
    field_in(&read_text(path)?, name)
}
