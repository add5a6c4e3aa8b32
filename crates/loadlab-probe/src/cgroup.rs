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

use crate::limits::{self, format_bytes, format_cpu_list, Limits, LimitsMode, CPU_PERIOD_US};
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

/// One v1 hierarchy or the v2 tree, as mounted.
#[derive(Debug, Clone)]
struct Mount {
    /// v1: the controllers on this hierarchy; v2: empty.
    controllers: Vec<String>,
    point: PathBuf,
    /// The cgroup path the mount shows as its root (not `/` inside a cgroup namespace).
    root: String,
}

#[derive(Debug, Default)]
struct Mounts {
    v1: Vec<Mount>,
    v2: Option<Mount>,
}

fn read_mounts() -> Mounts {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut mounts = Mounts::default();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 3 {
            continue;
        }
        let mount = |controllers| Mount {
            controllers,
            point: PathBuf::from(left[4].replace("\\040", " ")),
            root: left[3].to_string(),
        };
        match right[0] {
            "cgroup" => {
                let controllers = right[2]
                    .split(',')
                    .filter(|o| ["cpu", "cpuacct", "cpuset", "memory", "pids"].contains(o))
                    .map(String::from)
                    .collect::<Vec<_>>();
                if !controllers.is_empty() {
                    mounts.v1.push(mount(controllers));
                }
            }
            "cgroup2" if mounts.v2.is_none() => mounts.v2 = Some(mount(Vec::new())),
            _ => {}
        }
    }
    mounts
}

/// This process's cgroup path in the hierarchy holding `controller` (`""` for v2).
fn own_path(controller: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        matches.then(|| path.to_string())
    })
}

/// Where `path` (a cgroup path as /proc shows it) lives under `mount`.
fn dir_in(mount: &Mount, path: &str) -> PathBuf {
    let relative = path
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(path)
        .trim_start_matches('/');
    mount.point.join(relative)
}

/// The directories of one group, by the controller each file is read from. In v2 they are
/// all the same directory.
#[derive(Debug, Clone, Default)]
struct Dirs {
    cpu: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
    memory: Option<PathBuf>,
    cpuset: Option<PathBuf>,
    /// Every distinct directory: joined at spawn, deleted at the end.
    all: Vec<PathBuf>,
}

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
            "loadlab-{}-{}",
            std::process::id(),
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

fn unique(dirs: &Dirs) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = Vec::new();
    for d in [&dirs.cpu, &dirs.cpuacct, &dirs.memory, &dirs.cpuset]
        .into_iter()
        .flatten()
    {
        if !all.contains(d) {
            all.push(d.clone());
        }
    }
    all
}

fn v2_dirs(dir: &Path) -> Dirs {
    let d = Some(dir.to_path_buf());
    Dirs {
        cpu: d.clone(),
        cpuacct: d.clone(),
        memory: d.clone(),
        cpuset: d,
        all: vec![dir.to_path_buf()],
    }
}

fn create_v1(
    mounts: &Mounts,
    name: &str,
    limits: &Limits,
    report: &mut LimitsReport,
) -> Result<Cgroup, String> {
    let mut dirs = Dirs::default();
    let mut created: Vec<PathBuf> = Vec::new();
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut wanted = vec!["cpu", "cpuacct", "memory"];
    if limits.pin.is_some() {
        wanted.push("cpuset");
    }
    for controller in wanted {
        let Some(mount) = mounts
            .v1
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == controller))
        else {
            problems.push((
                controller.into(),
                "no v1 hierarchy has this controller".into(),
            ));
            continue;
        };
        let parent = dir_in(mount, &own_path(controller).unwrap_or_else(|| "/".into()));
        let dir = parent.join(name);
        if !created.contains(&dir) {
            sweep_stale(&parent);
            if let Err(e) = std::fs::create_dir(&dir) {
                problems.push((controller.into(), format!("mkdir {}: {e}", dir.display())));
                continue;
            }
            created.push(dir.clone());
        }
        let slot = match controller {
            "cpu" => &mut dirs.cpu,
            "cpuacct" => &mut dirs.cpuacct,
            "memory" => &mut dirs.memory,
            _ => &mut dirs.cpuset,
        };
        *slot = Some(dir);
    }
    dirs.all = created;
    lock_live().push(dirs.all.clone());
    let label = format!("/{name}");
    let group = Cgroup {
        version: Version::V1,
        dirs,
        owned: true,
        label,
    };
    let missing = |c: &str| {
        problems
            .iter()
            .find(|(x, _)| x == c)
            .map_or_else(|| format!("no {c} controller"), |(_, why)| why.clone())
    };
    if let Some(cpus) = limits.cpus {
        let quota = limits::quota_us(cpus);
        report.cpus = Some(match &group.dirs.cpu {
            Some(dir) => apply(
                format!("{cpus} cores"),
                &[
                    (dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string()),
                    (dir.join("cpu.cfs_quota_us"), quota.to_string()),
                ],
                format!("cpu.cfs_quota_us={quota} per cpu.cfs_period_us={CPU_PERIOD_US}"),
            ),
            None => not_held(format!("{cpus} cores"), missing("cpu")),
        });
    }
    if let Some(bytes) = limits.memory {
        report.memory = Some(match &group.dirs.memory {
            Some(dir) => {
                let mut writes = vec![(dir.join("memory.limit_in_bytes"), bytes.to_string())];
                // Without swap accounting a limit could be dodged by swapping; with it, cap
                // memory plus swap at the same figure.
                let memsw = dir.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    writes.push((memsw, bytes.to_string()));
                }
                apply(
                    format_bytes(bytes),
                    &writes,
                    format!("memory.limit_in_bytes={bytes} (swap included)"),
                )
            }
            None => not_held(format_bytes(bytes), missing("memory")),
        });
    }
    if let Some(cpus) = &limits.pin {
        let list = format_cpu_list(cpus);
        report.pin = Some(match &group.dirs.cpuset {
            Some(dir) => {
                // A new v1 cpuset starts empty: it needs memory nodes before any task joins.
                let parent = dir.parent().unwrap_or(dir);
                let mems = read_text(parent.join("cpuset.mems")).unwrap_or_default();
                apply(
                    format!("CPUs {list}"),
                    &[
                        (dir.join("cpuset.mems"), mems.trim().to_string()),
                        (dir.join("cpuset.cpus"), list.clone()),
                    ],
                    format!("cpuset.cpus={list}"),
                )
            }
            None => not_held(format!("CPUs {list}"), missing("cpuset")),
        });
    }
    if group.dirs.cpuacct.is_none() && group.dirs.memory.is_none() {
        return Err(problems
            .into_iter()
            .map(|(c, why)| format!("{c}: {why}"))
            .collect::<Vec<_>>()
            .join("; "));
    }
    Ok(group)
}

fn create_v2(
    mount: &Mount,
    name: &str,
    limits: &Limits,
    report: &mut LimitsReport,
) -> Result<Cgroup, String> {
    // Controllers must be enabled for the root's children; writing one already enabled is a
    // no-op, and a refusal shows up below as a missing interface file.
    let control = mount.point.join("cgroup.subtree_control");
    for c in ["+cpu", "+memory", "+cpuset"] {
        let _ = std::fs::write(&control, c);
    }
    sweep_stale(&mount.point);
    let dir = mount.point.join(name);
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let group = Cgroup {
        version: Version::V2,
        dirs: v2_dirs(&dir),
        owned: true,
        label: format!("/{name}"),
    };
    lock_live().push(group.dirs.all.clone());
    if let Some(cpus) = limits.cpus {
        let quota = limits::quota_us(cpus);
        report.cpus = Some(apply(
            format!("{cpus} cores"),
            &[(dir.join("cpu.max"), format!("{quota} {CPU_PERIOD_US}"))],
            format!("cpu.max={quota} {CPU_PERIOD_US}"),
        ));
    }
    if let Some(bytes) = limits.memory {
        let mut writes = vec![(dir.join("memory.max"), bytes.to_string())];
        let swap = dir.join("memory.swap.max");
        if swap.exists() {
            writes.push((swap, "0".into()));
        }
        report.memory = Some(apply(
            format_bytes(bytes),
            &writes,
            format!("memory.max={bytes}, memory.swap.max=0"),
        ));
    }
    if let Some(cpus) = &limits.pin {
        let list = format_cpu_list(cpus);
        report.pin = Some(apply(
            format!("CPUs {list}"),
            &[(dir.join("cpuset.cpus"), list.clone())],
            format!("cpuset.cpus={list}"),
        ));
    }
    Ok(group)
}

fn apply(requested: String, writes: &[(PathBuf, String)], how: String) -> LimitHeld {
    for (file, value) in writes {
        if let Err(e) = std::fs::write(file, value) {
            return not_held(
                requested,
                format!("writing {value} to {}: {e}", file.display()),
            );
        }
    }
    LimitHeld {
        requested,
        applied: true,
        how,
    }
}

fn not_held(requested: String, why: String) -> LimitHeld {
    LimitHeld {
        requested,
        applied: false,
        how: why,
    }
}

fn note_unapplied(limits: &Limits, report: &mut LimitsReport, reason: &str) {
    if let Some(cpus) = limits.cpus {
        report.cpus = Some(not_held(format!("{cpus} cores"), reason.into()));
    }
    if let Some(bytes) = limits.memory {
        report.memory = Some(not_held(format_bytes(bytes), reason.into()));
    }
    if let Some(cpus) = &limits.pin {
        report.pin = Some(not_held(
            format!("CPUs {}", format_cpu_list(cpus)),
            reason.into(),
        ));
    }
}

/// Kills every process left in the groups (loadlab's own server and its children) and
/// deletes the directories, retrying while the kernel finishes the kills.
fn remove_dirs(dirs: &[PathBuf]) {
    let deadline = Instant::now() + Duration::from_secs(3);
    for dir in dirs {
        loop {
            let pids: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
                .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
                .unwrap_or_default();
            for &pid in &pids {
                // SAFETY: kill takes plain integers; these PIDs are in a group loadlab made
                // for a server it started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            match std::fs::remove_dir(dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(_) => break,
            }
        }
    }
}

/// Deletes empty groups left by a loadlab that was killed outright (`loadlab-PID-N` whose
/// PID is gone). Groups that still hold processes are left for a person to look at.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("loadlab-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let _ = std::fs::remove_dir(entry.path());
    }
}

fn read_text(path: PathBuf) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn read_u64(path: PathBuf) -> Option<u64> {
    read_text(path)?.trim().parse().ok()
}

fn field_in(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (key, value) = l.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
}

fn stat_field(path: PathBuf, name: &str) -> Option<u64> {
    field_in(&read_text(path)?, name)
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
