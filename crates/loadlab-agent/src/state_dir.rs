//! The agent's state directory: what it keeps across restarts (the nonces it has seen) and
//! what it makes while it runs, recorded before it is made so that a successor can undo it
//! after any kill, SIGKILL included.
//!
//! Layout under `--state-dir`:
//! - `agent.lock`: held (`flock`) while an agent runs; a second agent on the same directory
//!   is refused, so anything found under `run/` at start belongs to a dead agent.
//! - `nonces`: every nonce accepted, 16 bytes each, appended (a request recorded before a
//!   restart is still a replay after it).
//! - `run/agent.json`: written at start, before any session: the agent's PID and its
//!   instance id (which every launched server carries in its environment as
//!   [`MARKER`]), where its cgroups go and the prefix of their names, and the cgroups made so
//!   far; once it listens, how a coordinator reaches it (`listening`: URL, certificate
//!   fingerprint, token file, role), which the generators playbook reads back from a running
//!   agent. The token itself is never written there.
//! - `run/loadlab-tls-*`: the throwaway certificates and keys of launched servers.
//!
//! At start, [`StateDir::open`] reaps what a previous agent left: every process in its
//! recorded cgroups (and in groups of its prefix when its PID is free), every process that
//! carries its marker (children that escaped a cgroup, or hosts without one), each killed by
//! identity (pidfd); then the cgroups; then the key material. It says what it removed.
//! Before it trusts the record, `run/`, the record and `nonces` must belong to the agent's
//! user and be writable by no one else, and the record is taken only as far as an agent
//! could have written it (its cgroups under this agent's parents, named with the recorded
//! agent's prefix): a forged record kills nothing outside loadlab's own groups.
//!
//! It must not print (the CLI does) and must not decide what a request may do.

use crate::config::AgentError;
use serde::{Deserialize, Serialize};
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The environment variable every launched server carries: `LOADLAB_AGENT_INSTANCE=<id>`.
pub const MARKER: &str = "LOADLAB_AGENT_INSTANCE";

/// What `run/agent.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Record {
    pid: u32,
    instance: String,
    /// Where the agent's cgroups are made, and the start of their names.
    cgroup_parents: Vec<PathBuf>,
    cgroup_prefix: String,
    /// The cgroup directories made and not yet removed.
    cgroups: Vec<PathBuf>,
    /// How to reach this agent, once it listens: what `deploy/ansible/generators.yml` reads
    /// back, so that an agent it finds running is reused as it is. Absent while starting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    listening: Option<Listening>,
}

/// How a coordinator reaches a listening agent (no secret: the token stays in its file).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Listening {
    /// `https://ADDR:PORT`, the address it bound.
    pub url: String,
    /// `sha256:...` of the certificate it serves.
    pub fingerprint: String,
    /// Where its token is, on its host.
    pub token_file: PathBuf,
    /// Whether it was started with `--generator` (may send load).
    pub generator: bool,
}

/// An agent's state directory, locked for as long as this lives.
#[derive(Debug)]
pub struct StateDir {
    root: PathBuf,
    /// Holds the `flock`.
    _lock: std::fs::File,
    record: Mutex<Record>,
    nonces: Mutex<std::fs::File>,
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> AgentError {
    move |e| AgentError::Invalid(format!("{context}: {e}"))
}

/// Refuses a directory or file that someone else owns or may write (or, for `private`, read):
/// what is kept there decides what the agent runs and kills.
pub fn check_owner_and_mode(path: &Path, what: &str, private: bool) -> Result<(), AgentError> {
    let meta = std::fs::metadata(path).map_err(io(format!("cannot read {}", path.display())))?;
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(AgentError::Invalid(format!(
            "{what} {} belongs to uid {}, not to the agent's user (uid {me}): another user \
             could change it; `chown` it or pick another",
            path.display(),
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o777;
    let forbidden = if private { 0o077 } else { 0o022 };
    if mode & forbidden != 0 {
        return Err(AgentError::Invalid(format!(
            "{what} {} can be {} by others (mode {mode:o}): run `chmod {} {}`",
            path.display(),
            if private { "read" } else { "written" },
            if meta.is_dir() { "700" } else { "600" },
            path.display()
        )));
    }
    Ok(())
}

impl StateDir {
    /// Locks `root` (made beforehand, owned by this user, not writable by others), reaps
    /// what a previous agent left, and records this one. Returns what was reaped, a line
    /// each.
    pub fn open(root: &Path) -> Result<(StateDir, Vec<String>), AgentError> {
        check_owner_and_mode(root, "the state dir", false)?;
        let lock_path = root.join("agent.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io(format!("cannot open {}", lock_path.display())))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(AgentError::Invalid(format!(
                "another agent is running on the state dir {}: stop it, or give this one \
                 another --state-dir",
                root.display()
            )));
        }
        let run = root.join("run");
        // What is kept here decides what the agent kills and which nonces it refuses:
        // another user able to write any of it could make it kill anything.
        for (path, what) in [
            (run.clone(), "the state dir's run/"),
            (run.join("agent.json"), "the state dir's run/agent.json"),
            (root.join("nonces"), "the state dir's nonces"),
        ] {
            if std::fs::symlink_metadata(&path).is_ok() {
                check_owner_and_mode(&path, what, false)?;
            }
        }
        let mut reaped = match std::fs::read(run.join("agent.json")) {
            Ok(bytes) => match serde_json::from_slice::<Record>(&bytes) {
                Ok(old) => {
                    let mut said = Vec::new();
                    let old = old.trusted(&mut said);
                    said.extend(reap(&old));
                    said
                }
                Err(e) => vec![format!(
                    "could not read {} ({e}); its cgroups, if any, are left for a person",
                    run.join("agent.json").display()
                )],
            },
            Err(_) => Vec::new(),
        };
        if run.exists() {
            for entry in std::fs::read_dir(&run)
                .map_err(io(format!("cannot read {}", run.display())))?
                .flatten()
            {
                let path = entry.path();
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("loadlab-tls-")
                {
                    let _ = std::fs::remove_dir_all(&path);
                    reaped.push(format!(
                        "removed a launched server's certificate and key {}",
                        path.display()
                    ));
                } else if path.is_dir() {
                    let _ = std::fs::remove_dir_all(&path);
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .create(&run)
            .map_err(io(format!("cannot create {}", run.display())))?;
        let record = Record {
            pid: std::process::id(),
            instance: random_hex(16),
            cgroup_parents: loadlab_probe::cgroup::parents_for_new(),
            cgroup_prefix: loadlab_probe::cgroup::name_prefix(std::process::id()),
            cgroups: Vec::new(),
            listening: None,
        };
        let nonces_path = root.join("nonces");
        let nonces = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .mode(0o600)
            .open(&nonces_path)
            .map_err(io(format!("cannot open {}", nonces_path.display())))?;
        let dir = StateDir {
            root: root.to_path_buf(),
            _lock: lock,
            record: Mutex::new(record),
            nonces: Mutex::new(nonces),
        };
        dir.save()?;
        Ok((dir, reaped))
    }

    /// Where launched servers' throwaway certificates go.
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// The value of [`MARKER`] for this agent.
    pub fn instance(&self) -> String {
        crate::session::lock(&self.record).instance.clone()
    }

    /// Records how to reach this agent, once it listens.
    pub fn note_listening(&self, listening: Listening) -> Result<(), AgentError> {
        crate::session::lock(&self.record).listening = Some(listening);
        self.save()
    }

    /// Records cgroup directories made for a launched server (`remove` false) or removed.
    pub fn note_cgroups(&self, dirs: &[PathBuf], remove: bool) {
        {
            let mut record = crate::session::lock(&self.record);
            if remove {
                record.cgroups.retain(|d| !dirs.contains(d));
            } else {
                record.cgroups.extend(dirs.iter().cloned());
            }
        }
        let _ = self.save();
    }

    fn save(&self) -> Result<(), AgentError> {
        let record = crate::session::lock(&self.record).clone();
        let path = self.run_dir().join("agent.json");
        let tmp = self.run_dir().join("agent.json.tmp");
        let bytes = serde_json::to_vec_pretty(&record)
            .map_err(|e| AgentError::Invalid(format!("cannot encode agent.json: {e}")))?;
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(io(format!("cannot write {}", path.display())))
    }

    /// The nonces accepted before, oldest first (the last `keep`).
    pub fn load_nonces(&self, keep: usize) -> Vec<[u8; 16]> {
        let mut bytes = Vec::new();
        let mut file = crate::session::lock(&self.nonces);
        if std::io::Seek::rewind(&mut *file).is_err() || file.read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        let all: Vec<[u8; 16]> = bytes
            .chunks_exact(16)
            .map(|c| c.try_into().expect("16 bytes"))
            .collect();
        let kept = all[all.len().saturating_sub(keep)..].to_vec();
        // Compacted at start: the log holds at most twice what is kept.
        if all.len() > 2 * keep {
            let flat: Vec<u8> = kept.iter().flatten().copied().collect();
            if file.set_len(0).is_ok() {
                let _ = file.write_all(&flat);
            }
        }
        kept
    }

    /// Appends an accepted nonce (a write(2) of 16 bytes: kept through a kill of the agent;
    /// a crash of the host loses at most what the page cache held).
    pub fn append_nonce(&self, nonce: &[u8; 16]) {
        let _ = crate::session::lock(&self.nonces).write_all(nonce);
    }
}

impl Record {
    /// The record as far as an agent could have written it (another agent of this host, of
    /// the same cgroup layout): cgroups under the parents this agent would use and named with
    /// the recorded agent's prefix, an instance id of 32 hexadecimal characters. Whatever
    /// else it names is dropped, and said in `said`: a forged record must not make the agent
    /// kill what is in a cgroup it names.
    fn trusted(mut self, said: &mut Vec<String>) -> Record {
        let parents = loadlab_probe::cgroup::parents_for_new();
        let prefix = loadlab_probe::cgroup::name_prefix(self.pid);
        if self.pid <= 1 || self.cgroup_prefix != prefix {
            if !self.cgroup_prefix.is_empty() {
                said.push(format!(
                    "ignored the cgroup prefix {:?} of run/agent.json: an agent of pid {} \
                     writes {prefix:?}",
                    self.cgroup_prefix, self.pid
                ));
            }
            self.cgroup_prefix = String::new();
        }
        let (kept, odd): (Vec<PathBuf>, Vec<PathBuf>) = self
            .cgroup_parents
            .into_iter()
            .partition(|p| parents.contains(p));
        self.cgroup_parents = kept;
        for p in odd {
            said.push(format!(
                "ignored the cgroup parent {} of run/agent.json: this agent makes its cgroups \
                 elsewhere",
                p.display()
            ));
        }
        let made_by_it = |dir: &PathBuf| {
            let named = dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !prefix.is_empty() && n.starts_with(&prefix));
            named
                && dir
                    .parent()
                    .is_some_and(|p| parents.iter().any(|q| q.as_path() == p))
        };
        let (kept, odd): (Vec<PathBuf>, Vec<PathBuf>) =
            self.cgroups.into_iter().partition(made_by_it);
        self.cgroups = kept;
        for dir in odd {
            said.push(format!(
                "ignored the cgroup {} of run/agent.json: not one an agent of pid {} makes \
                 (named {prefix}*, under {}); nothing in it was signalled",
                dir.display(),
                self.pid,
                parents
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.instance.len() != 32 || !self.instance.bytes().all(|b| b.is_ascii_hexdigit()) {
            self.instance = String::new();
        }
        self
    }
}

/// Kills and removes what the agent of `old` left.
fn reap(old: &Record) -> Vec<String> {
    let mut done = Vec::new();
    // Groups by exact directory first; by prefix only when the old PID is free (a live
    // process with that PID, another loadlab, may own groups of the same prefix).
    let mut groups_by_dir: Vec<PathBuf> = old.cgroups.clone();
    if !Path::new(&format!("/proc/{}", old.pid)).exists() && !old.cgroup_prefix.is_empty() {
        for parent in &old.cgroup_parents {
            if let Ok(entries) = std::fs::read_dir(parent) {
                for entry in entries.flatten() {
                    if entry
                        .file_name()
                        .to_string_lossy()
                        .starts_with(&old.cgroup_prefix)
                        && !groups_by_dir.contains(&entry.path())
                    {
                        groups_by_dir.push(entry.path());
                    }
                }
            }
        }
    }
    // Processes that escaped every group but carry the marker.
    if !old.instance.is_empty() {
        let marked = || marked_processes(&old.instance);
        let n = loadlab_probe::pidfd::signal_listed(marked, libc::SIGKILL);
        if n > 0 {
            done.push(format!(
                "killed {n} process{} a previous agent (pid {}) launched",
                if n == 1 { "" } else { "es" },
                old.pid
            ));
        }
    }
    for dir in groups_by_dir.iter().filter(|d| d.exists()) {
        done.push(loadlab_probe::cgroup::reap_dir(dir));
    }
    done
}

/// PIDs whose environment holds `MARKER=instance` exactly.
fn marked_processes(instance: &str) -> Vec<u32> {
    let want = format!("{MARKER}={instance}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

/// `bytes` random bytes as hexadecimal.
pub(crate) fn random_hex(bytes: usize) -> String {
    use ring::rand::SecureRandom;
    let mut buf = vec![0u8; bytes];
    let _ = ring::rand::SystemRandom::new().fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
