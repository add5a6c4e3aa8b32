//! Scratch directories for tests: one fresh directory per call under the system's temp dir,
//! removed when its guard drops, so that a test suite run leaves nothing in `/tmp`.
//!
//! When the test is failing (the guard drops while its thread panics) the directory is kept
//! and its path printed: it is the failure's evidence. It must not be shared between tests
//! (each call makes its own, even for the same name in the same process).

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::Path;

/// A directory that exists until dropped; derefs to its [`Path`]. The `tempfile` crate makes
/// and removes it; this adds the keeping of a failing test's directory.
#[derive(Debug)]
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
}

impl ScratchDir {
    /// `$TMPDIR/loadlab-NAME-XXXXXX`, created empty. Panics (with the cause) when it cannot
    /// be made: a test cannot go on without it.
    pub fn new(name: &str) -> ScratchDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("loadlab-{name}-"))
            .tempdir()
            .unwrap_or_else(|e| {
                panic!("cannot create a scratch directory: {e} (is TMPDIR writable?)")
            });
        ScratchDir { dir: Some(dir) }
    }

    pub fn path(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a scratch directory lives until dropped")
            .path()
    }
}

impl Deref for ScratchDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<OsStr> for ScratchDir {
    fn as_ref(&self) -> &OsStr {
        self.path().as_os_str()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Otherwise the TempDir removes the directory as it drops.
        if std::thread::panicking() {
            if let Some(dir) = self.dir.take() {
                eprintln!(
                    "test failed: its scratch directory is kept for inspection: {}",
                    dir.keep().display()
                );
            }
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
