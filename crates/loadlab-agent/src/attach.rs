//! Finds a server already running on this host: by PID, cgroup (or systemd unit), listening
//! port, or container name.
//!
//! It must not start or stop anything: containers are looked up with two fixed commands
//! (`podman inspect`, `docker inspect`), the name one checked argv element, never a shell.

use crate::reply::Refusal;
use loadlab_probe::{Cgroup, Source};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An attached server: how to sample it and how to describe it.
pub(crate) struct Attached {
    pub source: Source,
    /// `"pid"`, `"cgroup"`, `"port"` or `"container"`.
    pub kind: &'static str,
    pub description: String,
}

pub(crate) fn pid(pid: u32) -> Result<Attached, Refusal> {
    if pid == 0 || !loadlab_probe::procfs::alive(pid) {
        return Err(Refusal::field(
            "server.pid",
            format!("no process {pid} runs on this host: give the PID of the server here"),
        ));
    }
    Ok(Attached {
        source: Source::Tree { pid },
        kind: "pid",
        description: format!("pid {pid} and its descendants"),
    })
}

pub(crate) fn port(port: u16) -> Result<Attached, Refusal> {
    let pid = loadlab_probe::affinity::listeners(port)
        .into_iter()
        .min()
        .ok_or_else(|| {
            Refusal::field(
                "server.port",
                format!(
                    "no process listens on port {port} on this host (run the agent as root to \
                     see every process's sockets)"
                ),
            )
        })?;
    Ok(Attached {
        source: Source::Tree { pid },
        kind: "port",
        description: format!("pid {pid}, listening on port {port}"),
    })
}

/// A cgroup path, or a systemd unit (`nginx.service`) looked up under the cgroup mount.
pub(crate) fn cgroup(path: &str) -> Result<Attached, Refusal> {
    let bad = |reason: String| Refusal::field("server.path", reason);
    if path.is_empty() || path.contains("..") {
        return Err(bad(format!(
            "{path:?} is not a cgroup: give a path such as /system.slice/x.service or a unit \
             name such as x.service"
        )));
    }
    let resolved = if is_unit(path) {
        find_unit(Path::new("/sys/fs/cgroup"), path, 6)
            .map(|p| p.display().to_string())
            .ok_or_else(|| {
                bad(format!(
                    "no cgroup named {path} under /sys/fs/cgroup: is the unit running \
                     (systemctl status {path})?"
                ))
            })?
    } else {
        path.to_string()
    };
    let group = Cgroup::attach(&resolved).map_err(|e| bad(e.to_string()))?;
    Ok(Attached {
        source: Source::Attached(Arc::new(group)),
        kind: "cgroup",
        description: format!("cgroup {resolved}"),
    })
}

fn is_unit(path: &str) -> bool {
    !path.contains('/')
        && [".service", ".scope", ".slice"]
            .iter()
            .any(|s| path.ends_with(s))
}

/// The first directory named `name` under `dir`, breadth first, at most `depth` deep.
fn find_unit(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..depth {
        let mut next = Vec::new();
        for d in &level {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            for entry in entries.flatten() {
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                if entry.file_name() == name {
                    return Some(entry.path());
                }
                next.push(entry.path());
            }
        }
        level = next;
    }
    None
}

/// `[A-Za-z0-9][A-Za-z0-9_.-]*`: what Podman and Docker accept as a name or id.
pub(crate) fn valid_container_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        && name.len() <= 255
}

pub(crate) fn container(name: &str) -> Result<Attached, Refusal> {
    if !valid_container_name(name) {
        return Err(Refusal::field(
            "server.name",
            format!(
                "{name:?} is not a container name or id: letters, digits, '_', '.' and '-', \
                 starting with a letter or digit"
            ),
        ));
    }
    let mut tried = Vec::new();
    let mut pid = None;
    for tool in ["podman", "docker"] {
        match std::process::Command::new(tool)
            .args(["inspect", "--format", "{{.State.Pid}}", name])
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                match text.trim().parse::<u32>() {
                    Ok(p) if p > 0 => {
                        pid = Some(p);
                        break;
                    }
                    _ => tried.push(format!("{tool}: the container is not running")),
                }
            }
            Ok(out) => tried.push(format!(
                "{tool}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => tried.push(format!("{tool}: {e}")),
        }
    }
    let pid = pid.ok_or_else(|| {
        Refusal::field(
            "server.name",
            format!(
                "no running container {name} here ({}); check `podman ps` or `docker ps` on \
                 the agent's host",
                tried.join("; ")
            ),
        )
    })?;
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let path = cgroup_of(&text).ok_or_else(|| {
        Refusal::field(
            "server.name",
            format!("cannot read the cgroup of container {name} (pid {pid}) in /proc/{pid}/cgroup"),
        )
    })?;
    let group = Cgroup::attach(&path).map_err(|e| Refusal::field("server.name", e.to_string()))?;
    Ok(Attached {
        source: Source::Attached(Arc::new(group)),
        kind: "container",
        description: format!("container {name} (pid {pid}, cgroup {path})"),
    })
}

/// The cgroup path in `/proc/PID/cgroup`: v2's `0::PATH`, else v1's cpu controller line.
pub(crate) fn cgroup_of(proc_cgroup: &str) -> Option<String> {
    let lines: Vec<(&str, &str)> = proc_cgroup
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some((controllers, path))
        })
        .collect();
    lines
        .iter()
        .find(|(c, _)| c.split(',').any(|c| c == "cpu"))
        .or_else(|| lines.iter().find(|(c, _)| c.is_empty()))
        .map(|(_, p)| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_names_are_checked_before_any_command() {
        for good in ["web", "a1_b.c-d", "0123abcdef"] {
            assert!(valid_container_name(good), "{good}");
        }
        for bad in [
            "", "-rm", "a b", "a;rm", "$(x)", ".hidden", "a/b", "--format",
        ] {
            assert!(!valid_container_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_cgroup_of_a_process() {
        assert_eq!(
            cgroup_of("0::/system.slice/x.service\n").as_deref(),
            Some("/system.slice/x.service")
        );
        let v1 = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
        assert_eq!(cgroup_of(v1).as_deref(), Some("/docker/abc"));
        assert_eq!(cgroup_of(""), None);
    }

    #[test]
    fn units_are_told_from_paths() {
        assert!(is_unit("nginx.service"));
        assert!(!is_unit("/system.slice/nginx.service"));
        assert!(!is_unit("mygroup"));
    }
}
