//! Making a group: v1 (one directory per controller) or v2, writing each limit and saying
//! whether it held; removing groups, and sweeping those a killed loadlab left.

use super::mounts::*;
use super::*;
use loadlab_result::format;

pub(super) fn create_v1(
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
                    format::bytes(bytes as f64),
                    &writes,
                    format!("memory.limit_in_bytes={bytes} (swap included)"),
                )
            }
            None => not_held(format::bytes(bytes as f64), missing("memory")),
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

pub(super) fn create_v2(
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
            format::bytes(bytes as f64),
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

pub(super) fn apply(requested: String, writes: &[(PathBuf, String)], how: String) -> LimitHeld {
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

pub(super) fn not_held(requested: String, why: String) -> LimitHeld {
    LimitHeld {
        requested,
        applied: false,
        how: why,
    }
}

pub(super) fn note_unapplied(limits: &Limits, report: &mut LimitsReport, reason: &str) {
    if let Some(cpus) = limits.cpus {
        report.cpus = Some(not_held(format!("{cpus} cores"), reason.into()));
    }
    if let Some(bytes) = limits.memory {
        report.memory = Some(not_held(format::bytes(bytes as f64), reason.into()));
    }
    if let Some(cpus) = &limits.pin {
        report.pin = Some(not_held(
            format!("CPUs {}", format_cpu_list(cpus)),
            reason.into(),
        ));
    }
}

/// Kills every process left in the groups (loadlab's own server and its children) and
/// deletes the directories, retrying while the kernel finishes the kills. Returns how many
/// processes were killed.
pub(super) fn remove_dirs(dirs: &[PathBuf]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut killed = 0;
    for dir in dirs {
        loop {
            killed += kill_members(dir);
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
    killed
}

/// The processes in the group whose directory is `dir`.
pub(super) fn members(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// SIGKILLs every member of the group at `dir` by identity: `cgroup.kill` where the kernel
/// has it (v2, Linux 5.14: the whole group at once, a fork racing it included), else each
/// member through a pidfd, checked still a member after the pidfd was opened, so that a PID
/// that changed hands is never signalled. Returns the members signalled (all of them for
/// `cgroup.kill`).
pub(super) fn kill_members(dir: &Path) -> usize {
    let present = members(dir).len();
    if present == 0 {
        return 0;
    }
    let kill_file = dir.join("cgroup.kill");
    if kill_file.exists() && std::fs::write(&kill_file, "1").is_ok() {
        return present;
    }
    crate::pidfd::signal_listed(|| members(dir), libc::SIGKILL)
}

/// Deletes empty groups left by a loadlab that was killed outright (`loadlab-PID-N` whose
/// PID is gone). Groups that still hold processes are left for a person to look at.
pub(super) fn sweep_stale(parent: &Path) {
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
