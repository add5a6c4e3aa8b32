//! A cgroup of loadlab's own for a launched server: it applies the limits, holds every process
//! the server starts (a Node cluster or gunicorn's workers included: the sampler lists them
//! from here), charges their memory, counts throttling and OOM kills, and is deleted when
//! dropped.
//!
//! cgroups v2 is used when its controllers are enabled; otherwise the v1 hierarchies (as on
//! this project's VMs, where `/sys/fs/cgroup/unified` has no controllers and cpu, cpuacct,
//! memory and cpuset are v1). In v1 the group is created under loadlab's own cgroup of each
//! hierarchy, so any limit on loadlab's session still covers the server; in v2 under the
//! root, because the "no internal processes" rule forbids controllers on a child of a group
//! that holds processes (loadlab's own).
//!
//! A process joins the group in `pre_exec`, between fork and exec, so every thread and child
//! it ever creates is inside; moving it afterwards would miss threads started meanwhile.

use crate::limits::{self, format_cpu_list, Limits, LimitsMode, CPU_PERIOD_US};
use crate::ProbeError;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Version {
    V1,
    V2,
}

pub use loadlab_result::server::{LimitHeld, LimitsReport};

mod create;
mod files;
mod mounts;

use create::*;
use files::*;
use mounts::*;

/// A cgroup loadlab created (deleted on drop) or attached to (left alone).
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    dirs: Dirs,
    owned: bool,
    /// v1 or v2 name for messages: the path relative to a hierarchy's root.
    label: String,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// Groups alive now, so that a second Ctrl-C (which exits at once) can still delete them.
static LIVE: Mutex<Vec<Vec<PathBuf>>> = Mutex::new(Vec::new());

fn lock_live() -> std::sync::MutexGuard<'static, Vec<Vec<PathBuf>>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills what is inside every live group loadlab created and deletes the groups. For exit
/// paths that skip destructors (a second Ctrl-C).
pub fn cleanup_all() {
    let groups = std::mem::take(&mut *lock_live());
    for dirs in groups {
        remove_dirs(&dirs);
    }
}

/// Whether a group made here can hold a CPU pin (a cpuset controller, v1 or v2): where it
/// cannot, a pin is applied as an affinity mask in best-effort mode and refused in strict
/// mode, so a pin loadlab would choose by itself must not be asked for there.
pub fn can_pin() -> bool {
    let mounts = read_mounts();
    if mounts
        .v1
        .iter()
        .any(|m| m.controllers.iter().any(|c| c == "cpuset"))
    {
        return true;
    }
    mounts.v2.as_ref().is_some_and(|m| {
        std::fs::read_to_string(m.point.join("cgroup.controllers"))
            .unwrap_or_default()
            .split_whitespace()
            .any(|c| c == "cpuset")
    })
}

/// The start of the name of every group a process with this PID creates: `loadlab-PID-`.
pub fn name_prefix(pid: u32) -> String {
    format!("loadlab-{pid}-")
}

/// The directories [`Cgroup::create`] makes its groups in (each v1 hierarchy's directory of
/// this process's own cgroup, or the v2 root): where a supervisor records, before it
/// launches, that groups named [`name_prefix`] will be, so that a successor can find them.
pub fn parents_for_new() -> Vec<PathBuf> {
    let mounts = read_mounts();
    let mut parents = Vec::new();
    if mounts
        .v1
        .iter()
        .any(|m| m.controllers.iter().any(|c| c == "cpu" || c == "memory"))
    {
        for controller in ["cpu", "cpuacct", "memory", "cpuset"] {
            if let Some(mount) = mounts
                .v1
                .iter()
                .find(|m| m.controllers.iter().any(|c| c == controller))
            {
                let dir = dir_in(mount, &own_path(controller).unwrap_or_else(|| "/".into()));
                if !parents.contains(&dir) {
                    parents.push(dir);
                }
            }
        }
    } else if let Some(m) = &mounts.v2 {
        parents.push(m.point.clone());
    }
    parents
}

/// Kills every process in the group at `dir` (by identity) and removes it; what was done.
pub fn reap_dir(dir: &Path) -> String {
    let killed = remove_dirs(&[dir.to_path_buf()]);
    format!(
        "{} cgroup {}{}",
        if dir.exists() {
            "could not remove"
        } else {
            "removed"
        },
        dir.display(),
        match killed {
            0 => String::new(),
            1 => " (1 process in it killed)".into(),
            n => format!(" ({n} processes in it killed)"),
        }
    )
}

impl Cgroup {
    /// Creates a group for a server to be launched, applying `limits`. In strict mode a limit
    /// that cannot be applied is an error; in best-effort mode it is reported as not held.
    /// Returns no group (only the report) when cgroups are unusable and the mode allows it.
    pub fn create(
        limits: &Limits,
        mode: LimitsMode,
    ) -> Result<(Option<Cgroup>, LimitsReport), ProbeError> {
        let mounts = read_mounts();
        let v1_has = |c: &str| {
            mounts
                .v1
                .iter()
                .any(|m| m.controllers.iter().any(|x| x == c))
        };
        let v2_controllers = mounts
            .v2
            .as_ref()
            .map(|m| {
                std::fs::read_to_string(m.point.join("cgroup.controllers")).unwrap_or_default()
            })
            .unwrap_or_default();
        let v2_ready = mounts.v2.is_some()
            && ["cpu", "memory"]
                .iter()
                .all(|c| v2_controllers.split_whitespace().any(|x| x == *c));
        let name = format!(
            "{}{}",
            name_prefix(std::process::id()),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let mut report = LimitsReport {
            mode: match mode {
                LimitsMode::Strict => "strict",
                LimitsMode::BestEffort => "best-effort",
            }
            .into(),
            ..LimitsReport::default()
        };
        let built = if v1_has("cpu") || v1_has("memory") {
            report.mechanism = "cgroup v1".into();
            create_v1(&mounts, &name, limits, &mut report)
        } else if v2_ready {
            report.mechanism = "cgroup v2".into();
            create_v2(
                mounts.v2.as_ref().expect("checked"),
                &name,
                limits,
                &mut report,
            )
        } else {
            report.mechanism = "none".into();
            Err("this system has no usable cgroup hierarchy (cpu and memory controllers)".into())
        };
        let group = match built {
            Ok(group) => Some(group),
            Err(reason) => {
                let reason: String = reason;
                note_unapplied(limits, &mut report, &reason);
                // No group was made: nothing applied the limits.
                report.mechanism = "none".into();
                None
            }
        };
        if let Some(group) = &group {
            report.cgroup = Some(group.label.clone());
        }
        if mode == LimitsMode::Strict {
            let missing = report.not_applied();
            if !missing.is_empty() {
                drop(group);
                return Err(ProbeError::LimitUnavailable {
                    what: missing.join(", "),
                });
            }
        }
        Ok((group, report))
    }

    /// Attaches to an existing group, for `--cgroup PATH`: either a directory under a cgroup
    /// mount, or a cgroup path such as `/system.slice/nginx.service` looked up in every
    /// hierarchy. It is never deleted.
    pub fn attach(path: &str) -> Result<Cgroup, ProbeError> {
        let mounts = read_mounts();
        let fail = |reason: String| ProbeError::Attach {
            what: format!("cgroup {path}"),
            reason,
        };
        let as_dir = Path::new(path);
        // A directory under a mount: take its path relative to that mount.
        let relative = mounts
            .v1
            .iter()
            .chain(mounts.v2.iter())
            .find_map(|m| as_dir.strip_prefix(&m.point).ok().map(|r| r.to_path_buf()))
            .unwrap_or_else(|| PathBuf::from(path.trim_start_matches('/')));
        let find = |c: &str| {
            mounts
                .v1
                .iter()
                .find(|m| m.controllers.iter().any(|x| x == c))
                .map(|m| m.point.join(&relative))
                .filter(|d| d.is_dir())
        };
        let (version, dirs) = if mounts
            .v1
            .iter()
            .any(|m| m.controllers.iter().any(|c| c == "cpu" || c == "memory"))
        {
            let mut dirs = Dirs {
                cpu: find("cpu"),
                cpuacct: find("cpuacct"),
                memory: find("memory"),
                cpuset: find("cpuset"),
                all: Vec::new(),
            };
            dirs.all = unique(&dirs);
            (Version::V1, dirs)
        } else if let Some(m) = &mounts.v2 {
            let dir = m.point.join(&relative);
            if !dir.is_dir() {
                return Err(fail(format!("{} does not exist", dir.display())));
            }
            (Version::V2, v2_dirs(&dir))
        } else {
            return Err(fail("this system has no cgroup hierarchy mounted".into()));
        };
        if dirs.all.is_empty() {
            return Err(fail(format!(
                "no cgroup directory named {} under {}; pass a directory such as \
                 /sys/fs/cgroup/memory/NAME or a path as /proc/PID/cgroup shows it",
                relative.display(),
                mounts
                    .v1
                    .first()
                    .or(mounts.v2.as_ref())
                    .map_or("/sys/fs/cgroup".into(), |m| m.point.display().to_string())
            )));
        }
        Ok(Cgroup {
            version,
            dirs,
            owned: false,
            label: format!("/{}", relative.display()),
        })
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// The group as a path relative to its hierarchy's root, e.g. `/loadlab-812-0`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The directories of the group (one per v1 hierarchy used).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs.all
    }

    /// The `cgroup.procs` files a process writes `0` into to join the group, prepared for use
    /// between fork and exec (where allocating is not allowed).
    pub fn join_files(&self) -> Vec<CString> {
        self.dirs
            .all
            .iter()
            .filter_map(|d| {
                CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes()).ok()
            })
            .collect()
    }

    /// The processes in the group.
    pub fn pids(&self) -> Vec<u32> {
        let dir = self
            .dirs
            .cpuacct
            .as_ref()
            .or(self.dirs.memory.as_ref())
            .or(self.dirs.all.first());
        dir.and_then(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Sends `signal` to every process in the group, by identity (a pidfd each, opened
    /// and then checked still a member: a PID that changed hands is never signalled).
    /// Returns how many were signalled.
    pub fn signal_all(&self, signal: i32) -> usize {
        crate::pidfd::signal_listed(|| self.pids(), signal)
    }

    /// SIGKILLs every process in the group (`cgroup.kill` on v2, else [`Cgroup::signal_all`]).
    pub fn kill_all(&self) -> usize {
        self.dirs.all.first().map_or(0, |d| kill_members(d))
    }

    /// CFS bandwidth: periods elapsed, periods throttled, time throttled (ns).
    pub fn throttling(&self) -> Option<Throttling> {
        let file = self.dirs.cpu.as_ref()?.join("cpu.stat");
        let text = std::fs::read_to_string(file).ok()?;
        let field = |name: &str| field_in(&text, name);
        Some(Throttling {
            periods: field("nr_periods")?,
            throttled: field("nr_throttled")?,
            throttled_ns: match self.version {
                Version::V1 => field("throttled_time")?,
                Version::V2 => field("throttled_usec")? * 1000,
            },
        })
    }

    /// Memory charged to the group (what the limit is checked against), in bytes.
    pub fn memory_bytes(&self) -> Option<u64> {
        let dir = self.dirs.memory.as_ref()?;
        match self.version {
            Version::V1 => read_u64(dir.join("memory.usage_in_bytes")),
            Version::V2 => read_u64(dir.join("memory.current")),
        }
    }

    /// The group's memory limit in bytes, if it has one.
    pub fn memory_limit(&self) -> Option<u64> {
        let dir = self.dirs.memory.as_ref()?;
        let limit = match self.version {
            Version::V1 => read_u64(dir.join("memory.limit_in_bytes"))?,
            Version::V2 => read_u64(dir.join("memory.max"))?,
        };
        // v1 reports "no limit" as a huge page-aligned number.
        (limit < (1 << 60)).then_some(limit)
    }

    /// The group's CPU quota in cores, if it has one.
    pub fn cpu_quota(&self) -> Option<f64> {
        let dir = self.dirs.cpu.as_ref()?;
        match self.version {
            Version::V1 => {
                let quota: i64 = read_text(dir.join("cpu.cfs_quota_us"))?
                    .trim()
                    .parse()
                    .ok()?;
                let period = read_u64(dir.join("cpu.cfs_period_us"))?;
                (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
            }
            Version::V2 => {
                let text = read_text(dir.join("cpu.max"))?;
                let mut parts = text.split_whitespace();
                let quota: u64 = parts.next()?.parse().ok()?;
                let period: u64 = parts.next()?.parse().ok()?;
                (period > 0).then(|| quota as f64 / period as f64)
            }
        }
    }

    /// The CFS bandwidth period, when the group has a quota.
    pub fn cpu_period(&self) -> Option<Duration> {
        self.cpu_quota()?;
        let dir = self.dirs.cpu.as_ref()?;
        let us = match self.version {
            Version::V1 => read_u64(dir.join("cpu.cfs_period_us"))?,
            Version::V2 => read_text(dir.join("cpu.max"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?,
        };
        (us > 0).then(|| Duration::from_micros(us))
    }

    /// Processes the kernel's OOM killer killed in this group.
    pub fn oom_kills(&self) -> Option<u64> {
        let dir = self.dirs.memory.as_ref()?;
        match self.version {
            Version::V1 => stat_field(dir.join("memory.oom_control"), "oom_kill"),
            Version::V2 => stat_field(dir.join("memory.events"), "oom_kill"),
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if self.owned {
            lock_live().retain(|dirs| dirs != &self.dirs.all);
            remove_dirs(&self.dirs.all);
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttling {
    pub periods: u64,
    pub throttled: u64,
    pub throttled_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_under_a_mount() {
        let mount = Mount {
            controllers: vec!["memory".into()],
            point: "/sys/fs/cgroup/memory".into(),
            root: "/".into(),
        };
        assert_eq!(
            dir_in(&mount, "/process_api/abc"),
            PathBuf::from("/sys/fs/cgroup/memory/process_api/abc")
        );
        let namespaced = Mount {
            root: "/docker/123".into(),
            ..mount
        };
        assert_eq!(
            dir_in(&namespaced, "/docker/123/inner"),
            PathBuf::from("/sys/fs/cgroup/memory/inner")
        );
    }

    #[test]
    fn stat_fields() {
        let text = "nr_periods 12\nnr_throttled 3\nthrottled_time 4500\n";
        assert_eq!(field_in(text, "nr_throttled"), Some(3));
        assert_eq!(field_in(text, "nr_periods"), Some(12));
        assert_eq!(field_in(text, "missing"), None);
    }
}
