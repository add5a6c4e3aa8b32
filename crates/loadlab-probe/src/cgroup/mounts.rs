//! The cgroup hierarchies as mounted (v1 per controller, or the v2 tree), and where a
//! group of loadlab's own goes in each.

use super::*;

/// One v1 hierarchy or the v2 tree, as mounted.
#[derive(Debug, Clone)]
pub(super) struct Mount {
    /// v1: the controllers on this hierarchy; v2: empty.
    pub(super) controllers: Vec<String>,
    pub(super) point: PathBuf,
    /// The cgroup path the mount shows as its root (not `/` inside a cgroup namespace).
    pub(super) root: String,
}

#[derive(Debug, Default)]
pub(super) struct Mounts {
    pub(super) v1: Vec<Mount>,
    pub(super) v2: Option<Mount>,
}

pub(super) fn read_mounts() -> Mounts {
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
pub(super) fn own_path(controller: &str) -> Option<String> {
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
pub(super) fn dir_in(mount: &Mount, path: &str) -> PathBuf {
    let relative = path
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(path)
        .trim_start_matches('/');
    mount.point.join(relative)
}

/// The directories of one group, by the controller each file is read from. In v2 they are
/// all the same directory.
#[derive(Debug, Clone, Default)]
pub(super) struct Dirs {
    pub(super) cpu: Option<PathBuf>,
    pub(super) cpuacct: Option<PathBuf>,
    pub(super) memory: Option<PathBuf>,
    pub(super) cpuset: Option<PathBuf>,
    /// Every distinct directory: joined at spawn, deleted at the end.
    pub(super) all: Vec<PathBuf>,
}

pub(super) fn unique(dirs: &Dirs) -> Vec<PathBuf> {
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

pub(super) fn v2_dirs(dir: &Path) -> Dirs {
    let d = Some(dir.to_path_buf());
    Dirs {
        cpu: d.clone(),
        cpuacct: d.clone(),
        memory: d.clone(),
        cpuset: d,
        all: vec![dir.to_path_buf()],
    }
}
