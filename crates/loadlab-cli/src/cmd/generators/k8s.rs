//! `--generators k8s:[NAMESPACE/]NAME`: the agents `loadlab dist k8s --agents --name NAME`
//! wrote, found through the Kubernetes API with kubectl (`loadlab_dist::kubectl`, read by
//! `loadlab_dist::agents::find`): the StatefulSet's replica count, its pods by their labels
//! (each Ready one's pod IP and container port, in ordinal order, named by the pod), each
//! agent's certificate fingerprint from the line it printed at start (`kubectl logs`), so
//! that each pod's own self-signed certificate is pinned, and the token from the Secret.
//!
//! The token is read from kubectl's standard output and kept in an anonymous in-memory file
//! (`memfd_create`): `AgentEndpoint` names a token file, which the agent client reads at each
//! connection, and a memfd is a file that is on no disk and in no directory, reachable only
//! through this process's own descriptor (`/proc/self/fd/N`, close-on-exec, so no child
//! inherits it), sealed against writes, and gone when the process ends, however it ends. It
//! is never printed nor put on a command line.

use anyhow::Context as _;
use loadlab_agent::client::AgentEndpoint;
use loadlab_dist::agents::find;
use loadlab_dist::kubectl;
use loadlab_session::fleet::{Fleet, Generator, MAX_GENERATORS};
use std::io::Write as _;
use std::os::fd::{FromRawFd as _, IntoRawFd as _, OwnedFd};
use std::path::PathBuf;

/// The fleet of agents `name` (in `namespace`, else kubectl's). Every pod the StatefulSet
/// should have must be Ready, unless `skip_unready`: then those that are not are left out
/// (each named on stderr) and the load is split over the others.
pub fn fleet(name: &str, namespace: Option<&str>, skip_unready: bool) -> anyhow::Result<Fleet> {
    let source = match namespace {
        Some(ns) => format!("k8s:{ns}/{name}"),
        None => format!("k8s:{name}"),
    };
    let wrote = format!(
        "apply what `loadlab dist k8s --agents --name {name}` wrote, or name its namespace \
         (k8s:NAMESPACE/{name})"
    );
    let set = kubectl::agents_stateful_set(name, namespace).with_context(|| {
        format!("--generators {source}: cannot find the agents' StatefulSet; {wrote}")
    })?;
    let replicas = find::replicas(&set).with_context(|| format!("--generators {source}"))?;
    let pods = kubectl::agent_pods(name, namespace)
        .with_context(|| format!("--generators {source}: cannot list the agents' pods"))?;
    let agents =
        find::pods(&pods, name, replicas).with_context(|| format!("--generators {source}"))?;
    let ready = if skip_unready && !agents.ready.is_empty() {
        for pod in &agents.unready {
            eprintln!("--skip-unready: left out {pod}");
        }
        agents.ready
    } else {
        agents
            .all_ready(name, replicas)
            .with_context(|| format!("--generators {source}"))?
    };
    if ready.len() > MAX_GENERATORS {
        anyhow::bail!(
            "--generators {source}: {} agents is more than {MAX_GENERATORS}: scale the \
             StatefulSet down (kubectl scale statefulset/{name} --replicas {MAX_GENERATORS})",
            ready.len()
        );
    }
    let secret = loadlab_dist::agents::secret_name(name);
    let json = kubectl::agents_secret(name, namespace).with_context(|| {
        format!("--generators {source}: cannot read the agents' token (Secret {secret}); {wrote}")
    })?;
    let token = find::token(&json, &secret).with_context(|| format!("--generators {source}"))?;
    loadlab_agent::protocol::parse_token(&token).map_err(|why| {
        anyhow::anyhow!(
            "--generators {source}: the Secret {secret} does not hold a token the agents \
             accept: {why}"
        )
    })?;
    let token_file = in_memory_file(token.as_bytes())
        .with_context(|| format!("--generators {source}: cannot keep the token in memory"))?;
    let mut generators = Vec::new();
    for pod in ready {
        let log = kubectl::agent_log(&pod.name, namespace).with_context(|| {
            format!("--generators {source}: cannot read pod {}'s log", pod.name)
        })?;
        let fingerprint =
            find::fingerprint(&pod.name, &log).with_context(|| format!("--generators {source}"))?;
        loadlab_agent::protocol::parse_fingerprint(&fingerprint).map_err(|why| {
            anyhow::anyhow!(
                "--generators {source}: pod {}'s log names a fingerprint that does not read \
                 ({fingerprint}): {why}",
                pod.name
            )
        })?;
        generators.push(Generator {
            name: pod.name,
            endpoint: AgentEndpoint {
                url: pod.url,
                token_file: token_file.clone(),
                fingerprint: Some(fingerprint),
                cacert: None,
            },
        });
    }
    Ok(Fleet::of(generators))
}

/// `bytes` in a sealed anonymous in-memory file kept open for the rest of the process, and
/// the path that reads it (`/proc/self/fd/N`).
fn in_memory_file(bytes: &[u8]) -> std::io::Result<PathBuf> {
    // SAFETY: memfd_create with a NUL-terminated name; the descriptor is checked, then owned.
    let fd = unsafe {
        libc::memfd_create(
            c"loadlab-agents-token".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just made and nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    // Private (fchmod), as the agent client wants every token file: a memfd is made 0777.
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    file.write_all(bytes)?;
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor this function owns.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Kept open until the process ends: the client opens the path at each connection.
    let fd = file.into_raw_fd();
    Ok(PathBuf::from(format!("/proc/self/fd/{fd}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_token_reads_back_from_its_in_memory_file_which_is_on_no_disk() {
        let path = super::in_memory_file(b"0123456789abcdef0123456789abcdef\n").unwrap();
        for _ in 0..2 {
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                "0123456789abcdef0123456789abcdef\n",
                "each read starts at the beginning"
            );
        }
        let target = std::fs::read_link(&path).unwrap();
        assert!(
            target
                .to_string_lossy()
                .starts_with("/memfd:loadlab-agents-token"),
            "{}",
            target.display()
        );
        // Sealed: not even this process can change it.
        assert!(std::fs::write(&path, b"other").is_err());
    }
}
