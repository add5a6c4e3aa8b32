//! A target's source fingerprint: a stable hash of every source file (path and bytes) plus the
//! build command, so a build is redone exactly when something it depends on changed. FNV-1a
//! is used because it is stable across Rust releases (std's `DefaultHasher` is not promised
//! to be) and needs no dependency; this is a cache key, not a security boundary.

use crate::manifest::Target;
use crate::LabError;
use std::path::{Path, PathBuf};

/// Directories never walked: build outputs and dependency caches of the usual toolchains.
const SKIPPED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    ".venv",
    "__pycache__",
    ".git",
    "build",
    "dist",
    ".gradle",
];

/// The fingerprint of `target`'s current sources, as 16 hex digits.
pub fn of(target: &Target) -> Result<String, LabError> {
    let mut files = Vec::new();
    for source in &target.manifest.sources {
        let path = target.resolve(source);
        collect(&path, &mut files)?;
    }
    files.sort();
    files.dedup();
    let mut hash = Fnv::new();
    for part in target
        .manifest
        .build
        .command
        .iter()
        .chain(target.manifest.build.env.iter().flat_map(|(k, v)| [k, v]))
    {
        hash.write(part.as_bytes());
        hash.write(&[0]);
    }
    for file in &files {
        let bytes = std::fs::read(file).map_err(|source| LabError::Source {
            path: file.clone(),
            source,
        })?;
        // Paths relative to the target dir, so moving the checkout does not force a rebuild.
        let shown = relative(&target.dir, file);
        hash.write(shown.as_bytes());
        hash.write(&[0]);
        hash.write(&(bytes.len() as u64).to_le_bytes());
        hash.write(&bytes);
    }
    Ok(format!("{:016x}", hash.finish()))
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), LabError> {
    let meta = std::fs::metadata(path).map_err(|source| LabError::Source {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_file() {
        files.push(normalize(path));
        return Ok(());
    }
    let entries = std::fs::read_dir(path).map_err(|source| LabError::Source {
        path: path.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| LabError::Source {
            path: path.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        let child = entry.path();
        if child.is_dir() && SKIPPED_DIRS.iter().any(|s| name == *s) {
            continue;
        }
        collect(&child, files)?;
    }
    Ok(())
}

/// Removes `.` and resolves `..` lexically, so `rust-axum/../common` and `common` coincide.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn relative(base: &Path, file: &Path) -> String {
    let base = normalize(base);
    let base_parent = base.parent().unwrap_or(&base);
    // Sources may live beside the target dir (../common), so anchor at its parent.
    file.strip_prefix(base_parent)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_published_test_vectors() {
        let mut h = Fnv::new();
        assert_eq!(h.finish(), 0xcbf29ce484222325);
        h.write(b"a");
        assert_eq!(h.finish(), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(
            normalize(Path::new("/t/rust-axum/./../common/src")),
            PathBuf::from("/t/common/src")
        );
    }
}
