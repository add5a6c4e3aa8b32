//! Doing something inside another network namespace without moving loadlab: a thread of
//! its own enters the namespace (`setns(2)` changes the calling thread only), does the work,
//! and ends. What it reads from `/proc/thread-self/net` and the netlink sockets it opens are
//! the namespace's; a socket keeps its namespace after the thread is gone.

use std::path::{Path, PathBuf};

/// Where to read the kernel's network state: loadlab's own namespace, or one it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// loadlab's network namespace (the whole host, in the default one).
    Own,
    /// A namespace named by this file (`/run/netns/NAME`).
    Netns(PathBuf),
}

impl Scope {
    /// Runs `f` inside this scope and returns what it returned.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
        match self {
            Scope::Own => Ok(f()),
            Scope::Netns(path) => in_netns(path, f),
        }
    }
}

/// Runs `f` on a thread that first enters the network namespace named by `path`.
pub fn in_netns<T: Send>(path: &Path, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    let file = std::fs::File::open(path)?;
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: setns(2) on a descriptor owned by this thread; it moves this thread only.
            let rc =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "a thread inside the namespace panicked",
            ))
        })
    })
}
