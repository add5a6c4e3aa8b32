//! Runs with a live page on this machine, for `loadlab ui` to list as live: a run with `--ui`
//! writes a small file (its page's address, pid, the process's start, target and command,
//! redacted as the store redacts them; the results store it keeps its runs in, if any; with
//! `--ui-token-file`, that file's name, never the token) into a directory of this user's (`$XDG_RUNTIME_DIR/
//! loadlab-live`, else `loadlab-live-UID` in the temporary directory; mode 0700, refused when
//! another user owns it or may read it) and removes it as it ends; a run that registers
//! clears the entries of runs gone (killed, or left before their load started).
//!
//! Reading trusts nothing in a file: a pid that is gone, or now another process (its start
//! differs), is stale and left out; an address off loopback is never linked; every string is
//! escaped by the page that shows it. At most [`MOST`] files of at most [`BIGGEST`] bytes
//! are read. A failure to register only costs the listing: the run goes on.

use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The most entries read from the directory.
const MOST: usize = 64;
/// The largest entry read (an address, a pid and a command line).
const BIGGEST: u64 = 16 * 1024;

/// One run's entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LiveRun {
    /// The page's address, `127.0.0.1:PORT`.
    pub addr: String,
    pub pid: u32,
    /// The process's start (field 22 of `/proc/PID/stat`), so a reused pid is not taken for
    /// the run.
    pub proc_start: u64,
    pub started_at: String,
    pub target: String,
    pub command: String,
    /// The file the page's token is in (`--ui-token-file`), when every request to it needs
    /// the token; never the token itself, which this file must not keep. Without it the
    /// listing has no link that would answer 401: it names the file instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    /// The results store the run keeps its runs in (`--save`, an experiment), as
    /// [`store_key`] names it: `loadlab ui` of that store lists the run as its own, the
    /// others as runs elsewhere on this machine. `None`: it keeps none, or did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

/// The entry of this process's run, removed when dropped.
pub struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// This user's directory of live runs (not made).
fn dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() => d.join("loadlab-live"),
        // SAFETY: geteuid(2) cannot fail.
        _ => std::env::temp_dir().join(format!("loadlab-live-{}", unsafe { libc::geteuid() })),
    }
}

/// The directory, when it is this user's and private.
fn private_dir(make: bool) -> Option<PathBuf> {
    let dir = dir();
    if make {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    }
    loadlab_agent::state_dir::check_owner_and_mode(&dir, "the live runs' directory", true).ok()?;
    Some(dir)
}

/// A store's file as every process names it, wherever it was started and however the path
/// was written (`./a.db`, a symbolic link): its canonical path, or, for a file not made yet,
/// its directory's with its name.
pub fn store_key(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let canonical = std::fs::canonicalize(&absolute).ok().or_else(|| {
        let dir = std::fs::canonicalize(absolute.parent()?).ok()?;
        Some(dir.join(absolute.file_name()?))
    });
    canonical.unwrap_or(absolute).display().to_string()
}

/// Registers the run whose page listens on `addr` (loopback only: a page elsewhere needs a
/// token the listing could not give), with the file its token is in when it has one
/// (`token_file`: named, not read) and the results store it keeps its runs in (`store`).
/// Best effort: `None` when it cannot be written.
pub fn register(
    addr: SocketAddr,
    token_file: Option<&Path>,
    store: Option<&Path>,
) -> Option<Registration> {
    if !addr.ip().is_loopback() {
        return None;
    }
    let dir = private_dir(true)?;
    clear_stale(&dir);
    let pid = std::process::id();
    let mut command: Vec<String> = std::env::args()
        .map(|a| loadlab_store::redact_text(&a))
        .collect();
    loadlab_store::redact::redact_vars(&mut command);
    let entry = LiveRun {
        addr: addr.to_string(),
        pid,
        proc_start: proc_start(pid)?,
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        target: command
            .iter()
            .skip(1)
            .find(|a| a.contains("://"))
            .cloned()
            .unwrap_or_default(),
        command: command.join(" "),
        // Absolute, so that it reads the same from `loadlab ui` started elsewhere.
        token_file: token_file.map(|f| {
            std::path::absolute(f)
                .unwrap_or_else(|_| f.to_path_buf())
                .display()
                .to_string()
        }),
        store: store.map(store_key),
    };
    let path = dir.join(format!("{pid}.json"));
    let partial = dir.join(format!(".{pid}.json.partial"));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut f| f.write_all(&serde_json::to_vec(&entry).unwrap_or_default()))
        .and_then(|()| std::fs::rename(&partial, &path));
    match written {
        Ok(()) => Some(Registration { path }),
        Err(_) => {
            let _ = std::fs::remove_file(&partial);
            None
        }
    }
}

/// The live runs registered on this machine by this user, oldest first: stale entries and
/// pages off loopback left out.
pub fn live_runs() -> Vec<LiveRun> {
    let Some(dir) = private_dir(false) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut runs: Vec<LiveRun> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .take(MOST)
        .filter_map(|e| read(&e.path()))
        .filter_map(|mut r| {
            let addr: SocketAddr = r.addr.parse().ok()?;
            let live = addr.ip().is_loopback() && proc_start(r.pid) == Some(r.proc_start);
            // The address as parsed, not as written: only an IP and a port reach a link.
            r.addr = addr.to_string();
            live.then_some(r)
        })
        .collect();
    runs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    runs
}

/// Removes the entries of runs that are gone (killed, or left at once by a Ctrl-C before
/// their load started), so the directory does not fill: only entries that read as one and
/// name a process that is not theirs; anything else put there is left alone.
fn clear_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten().take(MOST) {
        let path = e.path();
        if let Some(run) = read(&path) {
            if proc_start(run.pid) != Some(run.proc_start) {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

fn read(path: &Path) -> Option<LiveRun> {
    use std::io::Read as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO put here must not hang the page.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = Vec::new();
    file.take(BIGGEST).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// When process `pid` started (clock ticks since boot), or `None` when there is none.
fn proc_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3 (state); the start is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_start_is_read_and_a_missing_pid_has_none() {
        let me = proc_start(std::process::id());
        assert!(me.is_some());
        assert_eq!(me, proc_start(std::process::id()));
        assert_eq!(proc_start(u32::MAX), None);
    }

    #[test]
    fn a_store_is_named_alike_however_its_path_is_written() {
        let dir = loadlab_testkit::ScratchDir::new("store-key");
        let real = dir.join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("a.db"), b"").unwrap();
        std::os::unix::fs::symlink(&real, dir.join("link")).unwrap();
        let key = store_key(&real.join("a.db"));
        assert_eq!(store_key(&dir.join("link/./a.db")), key);
        assert_eq!(store_key(&dir.join("link/../real/a.db")), key);
        // Not made yet (an experiment registers before it opens its store).
        assert_eq!(
            store_key(&dir.join("link/new.db")),
            store_key(&real.join("new.db"))
        );
        assert!(store_key(&real.join("new.db")).ends_with("/real/new.db"));
    }
}
