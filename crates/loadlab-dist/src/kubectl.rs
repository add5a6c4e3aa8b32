//! What is asked of a cluster, through `kubectl` (`$LOADLAB_KUBECTL` if set, else `kubectl`
//! on the PATH): a Job's pods by its `job-name` label and each one's log, for `dist collect
//! --k8s`; and for `--generators k8s:NAME`, the agents' StatefulSet, their pods, each one's
//! log and their Secret, as JSON for [`crate::agents::find`] to read. Nothing is changed in
//! the cluster. A Secret is read from kubectl's standard output (a pipe), never written
//! anywhere or put in an error.

use std::ffi::OsString;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum KubectlError {
    #[error(
        "cannot run {program} ({error}): install kubectl, or set $LOADLAB_KUBECTL to its path \
         (`dist collect` also reads saved logs with --from-logs)"
    )]
    Spawn {
        program: String,
        error: std::io::Error,
    },
    #[error("`kubectl {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("job {0} has no pods (is the name or the namespace wrong?)")]
    NoPods(String),
}

/// The kubectl to run: `$LOADLAB_KUBECTL`, else `kubectl` on the PATH.
fn program() -> OsString {
    std::env::var_os("LOADLAB_KUBECTL")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "kubectl".into())
}

fn kubectl(namespace: Option<&str>, args: &[&str]) -> Result<String, KubectlError> {
    let mut all: Vec<&str> = Vec::new();
    if let Some(ns) = namespace {
        all.extend(["-n", ns]);
    }
    all.extend(args);
    let program = program();
    let out = Command::new(&program)
        .args(&all)
        .output()
        .map_err(|error| KubectlError::Spawn {
            program: program.to_string_lossy().into_owned(),
            error,
        })?;
    if !out.status.success() {
        return Err(KubectlError::Failed {
            args: all.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each pod of `job` (its name) and its log.
pub fn job_logs(job: &str, namespace: Option<&str>) -> Result<Vec<(String, String)>, KubectlError> {
    let selector = format!("job-name={job}");
    let pods: Vec<String> = kubectl(namespace, &["get", "pods", "-l", &selector, "-o", "name"])?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if pods.is_empty() {
        return Err(KubectlError::NoPods(job.to_string()));
    }
    pods.into_iter()
        .map(|pod| {
            kubectl(namespace, &["logs", pod.as_str(), "-c", "loadlab"]).map(|log| (pod, log))
        })
        .collect()
}

/// `kubectl get statefulset NAME -o json`: the agents' StatefulSet.
pub fn agents_stateful_set(name: &str, namespace: Option<&str>) -> Result<String, KubectlError> {
    kubectl(namespace, &["get", "statefulset", name, "-o", "json"])
}

/// `kubectl get pods -l SELECTOR -o json`: the agents' pods, by their labels.
pub fn agent_pods(name: &str, namespace: Option<&str>) -> Result<String, KubectlError> {
    let selector = crate::agents::selector(name);
    kubectl(namespace, &["get", "pods", "-l", &selector, "-o", "json"])
}

/// `kubectl logs POD -c loadlab`: what an agent printed (its fingerprint among it).
pub fn agent_log(pod: &str, namespace: Option<&str>) -> Result<String, KubectlError> {
    kubectl(namespace, &["logs", pod, "-c", crate::agents::CONTAINER])
}

/// `kubectl get secret NAME-token -o json`: the Secret holding the agents' token.
pub fn agents_secret(name: &str, namespace: Option<&str>) -> Result<String, KubectlError> {
    let secret = crate::agents::secret_name(name);
    kubectl(namespace, &["get", "secret", &secret, "-o", "json"])
}
