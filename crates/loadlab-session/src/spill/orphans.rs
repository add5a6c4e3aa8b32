//! Spill files left by killed runs: a temporary spill file is named
//! `loadlab-PID-UNIXSECONDS-N.spill` in the temporary directory, so a file there whose
//! writer PID is gone (or that was written before the last boot) is a killed run's, waiting
//! for `loadlab recover`. This module only finds them: it never deletes or changes a file
//! (they are a person's data), and it does not print.

use std::path::{Path, PathBuf};

/// A spill file whose writer is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub pid: u32,
}

/// The name of a temporary spill file for this process, its `n`th run.
pub fn temp_name(pid: u32, unix_s: u64, n: u64) -> String {
    format!("loadlab-{pid}-{unix_s}-{n}.spill")
}

/// The writer PID and start time in a temporary spill file's name.
fn parse_name(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("loadlab-")?.strip_suffix(".spill")?;
    let mut parts = rest.split('-');
    let pid = parts.next()?.parse().ok()?;
    let unix_s = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    parts.next().is_none().then_some((pid, unix_s))
}

/// When this machine booted, in Unix seconds (from `/proc/stat`'s `btime`).
fn boot_unix_s() -> Option<u64> {
    std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The spill files in `dir` whose writer is gone, oldest first. A file written before the
/// last boot is orphaned whatever its PID has become since.
pub fn find(dir: &Path) -> Vec<Orphan> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let booted = boot_unix_s();
    let mut found: Vec<(u64, Orphan)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let (pid, unix_s) = parse_name(name.to_str()?)?;
            let alive = pid == std::process::id()
                || (super::stored::pid_alive(pid) && booted.is_none_or(|b| unix_s >= b));
            if alive {
                return None;
            }
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| {
                (
                    unix_s,
                    Orphan {
                        path: e.path(),
                        size_bytes: meta.len(),
                        pid,
                    },
                )
            })
        })
        .collect();
    found.sort_by(|a, b| (a.0, &a.1.path).cmp(&(b.0, &b.1.path)));
    found.into_iter().map(|(_, o)| o).collect()
}

#[cfg(test)]
mod orphan_tests {
    use super::*;

    #[test]
    fn names_parse_only_in_the_writers_form() {
        assert_eq!(
            parse_name(&temp_name(42, 1_700_000_000, 3)),
            Some((42, 1_700_000_000))
        );
        for bad in [
            "loadlab-42.spill",
            "run.json.spill",
            "loadlab-x-1-0.spill",
            "loadlab-1-2-3-4.spill",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_file_of_a_gone_writer_is_found_and_a_live_one_is_not() {
        let dir = std::env::temp_dir().join(format!("loadlab-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A child that has exited: its PID is gone (and not reused this soon).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let dead = dir.join(temp_name(gone, now, 0));
        std::fs::write(&dead, b"loadlab-spill 1\n").unwrap();
        std::fs::write(dir.join(temp_name(std::process::id(), now, 0)), b"x").unwrap();
        std::fs::write(dir.join("other.spill"), b"x").unwrap();
        let found = find(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            found,
            vec![Orphan {
                path: dead,
                size_bytes: 16,
                pid: gone
            }]
        );
    }
}
