//! Reading a Job's shards back with `kubectl`: the pods by the Job's `job-name` label, then
//! each pod's log. Nothing else is asked of the cluster.

use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum KubectlError {
    #[error("cannot run kubectl ({0}); install it, or collect from saved logs with --from-logs")]
    Spawn(std::io::Error),
    #[error("`kubectl {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("job {0} has no pods (is the name or the namespace wrong?)")]
    NoPods(String),
}

fn kubectl(args: &[&str]) -> Result<String, KubectlError> {
    let out = Command::new("kubectl")
        .args(args)
        .output()
        .map_err(KubectlError::Spawn)?;
    if !out.status.success() {
        return Err(KubectlError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Each pod of `job` (its name) and its log.
pub fn job_logs(job: &str, namespace: Option<&str>) -> Result<Vec<(String, String)>, KubectlError> {
    let selector = format!("job-name={job}");
    let mut base: Vec<&str> = Vec::new();
    if let Some(ns) = namespace {
        base.extend(["-n", ns]);
    }
    let mut list = base.clone();
    list.extend(["get", "pods", "-l", &selector, "-o", "name"]);
    let pods: Vec<String> = kubectl(&list)?
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
            let mut args = base.clone();
            args.extend(["logs", pod.as_str(), "-c", "loadlab"]);
            kubectl(&args).map(|log| (pod, log))
        })
        .collect()
}
