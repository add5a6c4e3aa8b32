//! Scratch directories for tests: one fresh directory per call under the system's temp dir,
//! removed when its guard drops, so that a test suite run leaves nothing in `/tmp`.
//!
//! When the test is failing (the guard drops while its thread panics) the directory is kept
//! and its path printed: it is the failure's evidence. It must not be shared between tests
//! (each call makes its own, even for the same name in the same process).

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A directory that exists until dropped; derefs to its [`Path`].
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// `$TMPDIR/loadlab-NAME-PID-N`, created empty. Panics (with the path and the cause) when
    /// it cannot be made: a test cannot go on without it.
    pub fn new(name: &str) -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("loadlab-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| {
            panic!(
                "cannot create the scratch directory {}: {e} (is TMPDIR writable?)",
                path.display()
            )
        });
        ScratchDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for ScratchDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for ScratchDir {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "test failed: its scratch directory is kept for inspection: {}",
                self.path.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ScratchDir;

    #[test]
    fn each_scratch_dir_is_fresh_and_gone_after_drop() {
        let a = ScratchDir::new("scratch-selftest");
        let b = ScratchDir::new("scratch-selftest");
        assert_ne!(a.path(), b.path());
        std::fs::write(a.join("file"), b"x").unwrap();
        let kept = a.path().to_path_buf();
        drop(a);
        assert!(!kept.exists(), "{} left behind", kept.display());
        assert!(b.is_dir());
    }

    #[test]
    fn a_failing_test_keeps_its_scratch_dir() {
        let path = std::thread::spawn(|| {
            let dir = ScratchDir::new("scratch-selftest-fail");
            let path = dir.path().to_path_buf();
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _dir = dir;
                panic!("deliberate");
            }));
            path
        })
        .join()
        .unwrap();
        assert!(path.is_dir());
        std::fs::remove_dir_all(&path).unwrap();
    }
}
