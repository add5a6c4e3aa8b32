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
        let mut reaped = match std::fs::read(run.join("agent.json")) {
            Ok(bytes) => match serde_json::from_slice::<Record>(&bytes) {
                Ok(old) => reap(&old),
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
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn a_second_agent_on_the_same_state_dir_is_refused() {
        let dir = private_dir();
        let (first, reaped) = StateDir::open(dir.path()).unwrap();
        assert!(reaped.is_empty(), "{reaped:?}");
        let err = StateDir::open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("another agent is running"), "{err}");
        drop(first);
        assert!(StateDir::open(dir.path()).is_ok());
    }

    #[test]
    fn a_world_writable_state_dir_and_a_readable_key_are_refused() {
        let dir = private_dir();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = StateDir::open(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("written by others") && err.contains("chmod 700"),
            "{err}"
        );
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "k").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = check_owner_and_mode(&key, "the key", true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("read by others") && err.contains("chmod 600"),
            "{err}"
        );
    }

    #[test]
    fn nonces_outlive_the_agent_and_the_log_is_compacted() {
        let dir = private_dir();
        let (state, _) = StateDir::open(dir.path()).unwrap();
        for i in 0..10u8 {
            state.append_nonce(&[i; 16]);
        }
        drop(state);
        let (state, _) = StateDir::open(dir.path()).unwrap();
        let kept = state.load_nonces(4);
        assert_eq!(kept, vec![[6; 16], [7; 16], [8; 16], [9; 16]]);
        // 10 > 2 * 4: compacted to the 4 kept.
        assert_eq!(
            std::fs::metadata(dir.path().join("nonces")).unwrap().len(),
            64
        );
    }

    #[test]
    fn the_address_is_recorded_once_listening_and_not_kept_for_a_successor() {
        let dir = private_dir();
        let record = |dir: &Path| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(dir.join("run/agent.json")).unwrap()).unwrap()
        };
        let (state, _) = StateDir::open(dir.path()).unwrap();
        assert!(record(dir.path()).get("listening").is_none());
        state
            .note_listening(Listening {
                url: "https://10.0.0.11:7070".into(),
                fingerprint: "sha256:00".into(),
                token_file: dir.path().join("token"),
                generator: true,
            })
            .unwrap();
        let r = record(dir.path());
        assert_eq!(r["pid"], std::process::id());
        assert_eq!(r["listening"]["url"], "https://10.0.0.11:7070");
        assert_eq!(r["listening"]["generator"], true);
        drop(state);
        // A dead agent's address must not pass for its successor's before it listens.
        let (_state, _) = StateDir::open(dir.path()).unwrap();
        assert!(record(dir.path()).get("listening").is_none());
    }

    #[test]
    fn key_material_left_in_run_is_removed_at_start() {
        let dir = private_dir();
        let (state, _) = StateDir::open(dir.path()).unwrap();
        let certs = loadlab_certs::CertDir::create_in(&state.run_dir(), &[]).unwrap();
        let key = certs.key_path();
        // SIGKILL: no destructor runs.
        std::mem::forget(certs);
        drop(state);
        assert!(key.exists());
        let (_state, reaped) = StateDir::open(dir.path()).unwrap();
        assert!(!key.exists());
        assert!(
            reaped.iter().any(|l| l.contains("certificate and key")),
            "{reaped:?}"
        );
    }
}
