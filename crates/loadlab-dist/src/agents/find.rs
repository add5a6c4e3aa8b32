//! The agents of `dist k8s --agents` found again from what kubectl says of them: the
//! StatefulSet's replica count, its pods (each one's IP, the container's port named
//! [`PORT_NAME`], whether it is Ready), each agent's certificate fingerprint from the line it
//! prints at start, and the token from the Secret. Pure: the CLI runs kubectl and hands over
//! its output.
//!
//! A pod that should be there and is not Ready (still pulling its image, crashing, being
//! deleted, or not made yet) is named with its phase and why, never quietly left out: a
//! fleet one generator short sends each of the others a bigger share than planned. Pods with
//! an ordinal at or past the replica count are leaving after a scale-down and are not
//! counted. The token never appears in an error: a Secret that does not read is reported
//! without the parser's details, which could quote it.

use super::{selector, CONTAINER, PORT_NAME};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Pod, Secret};

/// One Ready agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPod {
    /// The pod's name, `NAME-k`: how the fleet names this generator.
    pub name: String,
    /// Its ordinal `k` in the StatefulSet: the fleet's order, so shard k+1 is always pod k.
    pub ordinal: u32,
    /// `https://POD_IP:PORT`.
    pub url: String,
}

/// The agents the StatefulSet should have, as they stand.
#[derive(Debug, Clone, PartialEq)]
pub struct Agents {
    /// Ready pods, in ordinal order.
    pub ready: Vec<AgentPod>,
    /// Each pod that should be there and is not Ready, in ordinal order, with why:
    /// `loadgen-2 (Pending; container loadlab waiting: ImagePullBackOff)`.
    pub unready: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("kubectl's answer about {what} does not read as Kubernetes objects: {why}")]
    Json { what: String, why: String },
    #[error(
        "the Secret {0} does not read as a Secret (the parser's details are left out: they \
         could quote the token)"
    )]
    SecretJson(String),
    #[error(
        "no pod of agents {name} (labels {selector}): apply the manifest `loadlab dist k8s \
         --agents --name {name}` wrote, or name its namespace (k8s:NAMESPACE/{name})"
    )]
    NoPods { name: String, selector: String },
    #[error(
        "{} of agents {name}'s {replicas} pods {} not ready: {}; wait for them (kubectl \
         rollout status statefulset/{name}), or give --skip-unready to split the load over the \
         ready ones",
        pods.len(),
        if pods.len() == 1 { "is" } else { "are" },
        pods.join(", ")
    )]
    NotReady {
        name: String,
        replicas: u32,
        pods: Vec<String>,
    },
    #[error(
        "StatefulSet {0} has 0 replicas: scale it up (kubectl scale statefulset/{0} \
         --replicas N)"
    )]
    NoReplicas(String),
    #[error("pod {pod} {why}")]
    Pod { pod: String, why: String },
    #[error(
        "pod {pod}'s log has no `fingerprint: sha256:...` line, which the agent prints when it \
         starts ({ends}); without it the coordinator cannot pin the pod's certificate. Is it \
         running `loadlab agent`? `kubectl logs {pod} -c {CONTAINER}` shows what it printed"
    )]
    NoFingerprint { pod: String, ends: String },
    #[error(
        "the Secret {0} holds no `token` key: it is not the one `loadlab dist k8s --agents` \
         wrote; apply that manifest again"
    )]
    NoToken(String),
}

fn json_error(what: &str) -> impl Fn(serde_json::Error) -> FindError + '_ {
    move |e| FindError::Json {
        what: what.to_string(),
        why: e.to_string(),
    }
}

/// The replica count of the StatefulSet `kubectl get statefulset NAME -o json` printed.
pub fn replicas(stateful_set_json: &str) -> Result<u32, FindError> {
    let set: StatefulSet =
        serde_json::from_str(stateful_set_json).map_err(json_error("the StatefulSet"))?;
    // Absent means 1, as the API server defaults it.
    let replicas = set.spec.and_then(|s| s.replicas).unwrap_or(1);
    Ok(u32::try_from(replicas).unwrap_or(0))
}

/// A pod list as kubectl prints it (`kind: List`; the API server's own says `PodList`).
#[derive(serde::Deserialize)]
struct PodItems {
    kind: String,
    items: Vec<Pod>,
}

/// The agents `name`'s StatefulSet of `replicas` should have, read from `kubectl get pods -l
/// SELECTOR -o json`.
pub fn pods(list_json: &str, name: &str, replicas: u32) -> Result<Agents, FindError> {
    let list: PodItems = serde_json::from_str(list_json).map_err(json_error("the pods"))?;
    if list.kind != "List" && list.kind != "PodList" {
        return Err(FindError::Json {
            what: "the pods".into(),
            why: format!("kind {:?}, not a list of pods", list.kind),
        });
    }
    if replicas == 0 {
        return Err(FindError::NoReplicas(name.to_string()));
    }
    if list.items.is_empty() {
        return Err(FindError::NoPods {
            name: name.to_string(),
            selector: selector(name),
        });
    }
    let mut ready = Vec::new();
    let mut unready: Vec<(u32, String)> = Vec::new();
    let mut seen = Vec::new();
    for pod in &list.items {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        let ordinal = pod_name
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|k| k.parse::<u32>().ok())
            .ok_or_else(|| FindError::Pod {
                pod: pod_name.clone(),
                why: format!(
                    "carries the labels of agents {name} but is not one of StatefulSet \
                     {name}'s pods ({name}-0, {name}-1, ...): delete it or change its labels"
                ),
            })?;
        if ordinal >= replicas {
            continue;
        }
        seen.push(ordinal);
        match not_ready(pod) {
            Some(why) => unready.push((ordinal, format!("{pod_name} ({why})"))),
            None => ready.push(AgentPod {
                url: url(pod, &pod_name)?,
                name: pod_name,
                ordinal,
            }),
        }
    }
    for k in (0..replicas).filter(|k| !seen.contains(k)) {
        unready.push((k, format!("{name}-{k} (not made yet)")));
    }
    ready.sort_by_key(|p| p.ordinal);
    unready.sort_by_key(|(k, _)| *k);
    Ok(Agents {
        ready,
        unready: unready.into_iter().map(|(_, why)| why).collect(),
    })
}

impl Agents {
    /// Every agent, or the error naming those not Ready.
    pub fn all_ready(self, name: &str, replicas: u32) -> Result<Vec<AgentPod>, FindError> {
        if self.unready.is_empty() && !self.ready.is_empty() {
            return Ok(self.ready);
        }
        Err(FindError::NotReady {
            name: name.to_string(),
            replicas,
            pods: self.unready,
        })
    }
}

/// Why `pod` cannot take load yet, or `None` when it is Ready.
fn not_ready(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Some("being deleted".into());
    }
    let status = pod.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    if ready.is_some_and(|c| c.status == "True") {
        return None;
    }
    let phase = status
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "no phase yet".into());
    let container = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == CONTAINER))
        .and_then(|c| c.state.as_ref())
        .and_then(|state| {
            if let Some(w) = &state.waiting {
                Some(format!(
                    "container {CONTAINER} waiting: {}",
                    w.reason.as_deref().unwrap_or("no reason given")
                ))
            } else if let Some(t) = &state.terminated {
                Some(format!(
                    "container {CONTAINER} exited {}{}",
                    t.exit_code,
                    t.reason
                        .as_deref()
                        .map_or(String::new(), |r| format!(": {r}"))
                ))
            } else {
                state
                    .running
                    .as_ref()
                    .map(|_| format!("container {CONTAINER} running, not yet ready"))
            }
        });
    Some(match container {
        Some(c) => format!("{phase}; {c}"),
        None => phase,
    })
}

/// `https://POD_IP:PORT`, the port being the agent container's port named [`PORT_NAME`].
fn url(pod: &Pod, pod_name: &str) -> Result<String, FindError> {
    let fail = |why: String| FindError::Pod {
        pod: pod_name.to_string(),
        why,
    };
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .filter(|ip| !ip.is_empty())
        .ok_or_else(|| fail("is Ready but has no pod IP".into()))?;
    let port = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == CONTAINER))
        .and_then(|c| c.ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.name.as_deref() == Some(PORT_NAME)))
        .map(|p| p.container_port)
        .ok_or_else(|| {
            fail(format!(
                "has no container {CONTAINER} with a port named {PORT_NAME}: was it made by \
                 `loadlab dist k8s --agents`?"
            ))
        })?;
    Ok(if ip.contains(':') {
        format!("https://[{ip}]:{port}")
    } else {
        format!("https://{ip}:{port}")
    })
}

/// The certificate fingerprint the agent printed at start (`  fingerprint: sha256:...`), the
/// last one if the log holds several.
pub fn fingerprint(pod: &str, log: &str) -> Result<String, FindError> {
    let found = log
        .lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("fingerprint:"))
        .map(str::trim)
        .find(|fp| fp.starts_with("sha256:"));
    match found {
        Some(fp) => Ok(fp.to_string()),
        None => {
            let last = log.lines().rev().map(str::trim).find(|l| !l.is_empty());
            Err(FindError::NoFingerprint {
                pod: pod.to_string(),
                ends: match last {
                    Some(l) => format!("its log ends: {l}"),
                    None => "its log is empty".into(),
                },
            })
        }
    }
}

/// The token held in the Secret `name` (`kubectl get secret NAME -o json`), as its file
/// would hold it; the caller checks it against the agent's rules.
pub fn token(secret_json: &str, name: &str) -> Result<String, FindError> {
    let secret: Secret =
        serde_json::from_str(secret_json).map_err(|_| FindError::SecretJson(name.to_string()))?;
    let bytes = secret
        .data
        .and_then(|mut d| d.remove(super::TOKEN_KEY))
        .ok_or_else(|| FindError::NoToken(name.to_string()))?;
    String::from_utf8(bytes.0).map_err(|_| FindError::SecretJson(name.to_string()))
}
