//! `loadlab dist k8s --agents`: a fleet of generator agents on Kubernetes, built from the
//! typed API structures of `k8s-openapi`, written as YAML and read back ([`parse`]); and, in
//! [`find`], the same fleet found again in the cluster by the coordinator
//! (`--generators k8s:[NAMESPACE/]NAME`).
//!
//! - a Secret (`NAME-token`) holding the agents' bearer token, made by the CLI (which knows the
//!   token rules); mounted read-only in every pod, never in an environment variable or argv;
//! - a StatefulSet of N pods, each running `loadlab agent --generator --listen
//!   0.0.0.0:7070` with its state (its self-signed certificate) in an emptyDir. A StatefulSet
//!   rather than an Indexed Job: an agent is a server that waits for coordinators, not a task
//!   that completes; a StatefulSet keeps N of them running (restarting one that dies), names
//!   them `NAME-0` ... `NAME-(N-1)` so a run's shards are always dealt in the same order, and
//!   scales with `kubectl scale`. `podManagementPolicy: Parallel` starts them all at once;
//! - a headless Service (`clusterIP: None`) over them, the StatefulSet's governing Service,
//!   which gives each pod a DNS name (`NAME-0.NAME.NAMESPACE.svc`);
//! - the Job's resources and spread: CPU and memory requests equal to the limits, and pod
//!   anti-affinity on `kubernetes.io/hostname` (two generators on one node share its CPU and
//!   its link, which is what a fleet is there to avoid).
//!
//! The container runs as uid 0 with every capability dropped, no privilege escalation and a
//! read-only root filesystem: the agent refuses a token file that is not its own user's or
//! that others may read, and Kubernetes mounts a Secret's files owned by root (mode 0400
//! here). The pod template carries a digest of the token ([`TOKEN_DIGEST_ANNOTATION`]), so
//! that applying a newly written manifest (a new token) restarts every agent with it rather
//! than leaving old pods on the old token beside new ones.
//!
//! It must not talk to a cluster (the CLI runs kubectl) nor decide what a valid token is
//! (`loadlab_agent::protocol::parse_token` does).

pub mod find;

use crate::k8s::{apart, guaranteed, ParseError, Spread, RUN_LABEL};
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, PodSpec, PodTemplateSpec, Probe,
    SeccompProfile, Secret, SecretVolumeSource, SecurityContext, Service, ServicePort, ServiceSpec,
    TCPSocketAction, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use serde::Deserialize as _;
use std::collections::BTreeMap;

/// The port every agent listens on in its pod (`loadlab agent`'s default).
pub const AGENT_PORT: u16 = 7070;
/// The name of that port, on the container and on the Service: how the coordinator finds it.
pub const PORT_NAME: &str = "agent";
/// The agent's container in each pod.
pub const CONTAINER: &str = "loadlab";
/// The label that tells agents' pods from a Job's shards of the same name.
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
pub const COMPONENT: &str = "generator";
/// Where the Secret is mounted; the token is the file `token` in it.
pub const TOKEN_DIR: &str = "/etc/loadlab-agent";
/// The key of the token in the Secret.
pub const TOKEN_KEY: &str = "token";
/// The emptyDir that holds the agent's state directory (`state` in it, which the agent makes
/// private to itself: an emptyDir is writable by all, which the agent refuses for its state).
pub const STATE_VOLUME_DIR: &str = "/var/lib/loadlab-agent";
/// The pod template's annotation with the first 16 hexadecimal digits of the token's
/// SHA-256: a new token changes the template, so applying it rolls every agent onto it.
pub const TOKEN_DIGEST_ANNOTATION: &str = "loadlab.dev/token-sha256";

/// What the agents' manifests are made from.
#[derive(Clone)]
pub struct Plan {
    /// The StatefulSet's and the Service's name (the Secret is `NAME-token`).
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub replicas: u32,
    /// Per agent, e.g. `2` and `1Gi`.
    pub cpu: String,
    pub memory: String,
    pub spread: Spread,
    /// The agents' bearer token, already checked against the agent's rules.
    pub token: String,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("name", &self.name)
            .field("replicas", &self.replicas)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The Secret, the headless Service and the StatefulSet.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    pub secret: Secret,
    pub service: Service,
    pub stateful_set: StatefulSet,
}

/// The Secret holding the token of agents `name`.
pub fn secret_name(name: &str) -> String {
    format!("{name}-token")
}

/// The labels of agents `name`'s pods: the ones the Service, the StatefulSet and the
/// anti-affinity select, and the coordinator looks for.
pub fn labels(name: &str) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name".to_string(), "loadlab".to_string()),
        (COMPONENT_LABEL.to_string(), COMPONENT.to_string()),
        (RUN_LABEL.to_string(), name.to_string()),
    ]
    .into()
}

/// [`labels`]' selecting part as a kubectl label selector (`-l`).
pub fn selector(name: &str) -> String {
    format!("{RUN_LABEL}={name},{COMPONENT_LABEL}={COMPONENT}")
}

/// Why `name` cannot name agents: a StatefulSet's pods carry a label made of its name and a
/// 10-character revision hash, which must fit in 63 characters, and a Service's name must
/// start with a letter (RFC 1035).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--name {name:?}: agents need a name of lower-case letters, digits and '-', starting \
             with a letter, not ending with '-', at most 52 characters (e.g. loadgen)"
        ))
    }
}

fn token_digest(token: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    d.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

pub fn manifests(plan: &Plan) -> Manifests {
    let labels = labels(&plan.name);
    let meta = |name: String| ObjectMeta {
        name: Some(name),
        namespace: plan.namespace.clone(),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    let secret = Secret {
        metadata: meta(secret_name(&plan.name)),
        type_: Some("Opaque".to_string()),
        data: Some(
            [(
                TOKEN_KEY.to_string(),
                ByteString(format!("{}\n", plan.token).into_bytes()),
            )]
            .into(),
        ),
        ..Secret::default()
    };
    let port = IntOrString::String(PORT_NAME.to_string());
    let service = Service {
        metadata: meta(plan.name.clone()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            selector: Some(labels.clone()),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_string()),
                port: i32::from(AGENT_PORT),
                target_port: Some(port.clone()),
                protocol: Some("TCP".to_string()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let state_dir = format!("{STATE_VOLUME_DIR}/state");
    let container = Container {
        name: CONTAINER.to_string(),
        image: Some(plan.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        command: Some(
            [
                "loadlab",
                "agent",
                "--generator",
                "--listen",
                &format!("0.0.0.0:{AGENT_PORT}"),
                "--token-file",
                &format!("{TOKEN_DIR}/{TOKEN_KEY}"),
                "--state-dir",
                &state_dir,
            ]
            .map(String::from)
            .to_vec(),
        ),
        ports: Some(vec![ContainerPort {
            name: Some(PORT_NAME.to_string()),
            container_port: i32::from(AGENT_PORT),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        // Ready once it accepts connections: the coordinator takes only Ready pods.
        readiness_probe: Some(Probe {
            tcp_socket: Some(TCPSocketAction {
                port,
                ..TCPSocketAction::default()
            }),
            period_seconds: Some(5),
            ..Probe::default()
        }),
        resources: Some(guaranteed(&plan.cpu, &plan.memory)),
        security_context: Some(SecurityContext {
            run_as_user: Some(0),
            run_as_group: Some(0),
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                ..Capabilities::default()
            }),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                ..SeccompProfile::default()
            }),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "token".to_string(),
                mount_path: TOKEN_DIR.to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "state".to_string(),
                mount_path: STATE_VOLUME_DIR.to_string(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    let stateful_set = StatefulSet {
        metadata: meta(plan.name.clone()),
        spec: Some(StatefulSetSpec {
            service_name: Some(plan.name.clone()),
            replicas: Some(i32::try_from(plan.replicas).unwrap_or(i32::MAX)),
            pod_management_policy: Some("Parallel".to_string()),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    annotations: Some(
                        [(
                            TOKEN_DIGEST_ANNOTATION.to_string(),
                            token_digest(&plan.token),
                        )]
                        .into(),
                    ),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    affinity: Some(apart(labels.clone(), plan.spread)),
                    // The agents ask nothing of the Kubernetes API.
                    automount_service_account_token: Some(false),
                    containers: vec![container],
                    volumes: Some(vec![
                        Volume {
                            name: "token".to_string(),
                            secret: Some(SecretVolumeSource {
                                secret_name: Some(secret_name(&plan.name)),
                                default_mode: Some(0o400),
                                ..SecretVolumeSource::default()
                            }),
                            ..Volume::default()
                        },
                        Volume {
                            name: "state".to_string(),
                            empty_dir: Some(EmptyDirVolumeSource::default()),
                            ..Volume::default()
                        },
                    ]),
                    ..PodSpec::default()
                }),
            },
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    };
    Manifests {
        secret,
        service,
        stateful_set,
    }
}

/// The manifests as one YAML stream (`kubectl apply -f` reads it whole).
pub fn to_yaml(m: &Manifests) -> String {
    let doc = |v: Result<String, serde_norway::Error>| v.expect("a typed object serialises");
    format!(
        "---\n{}---\n{}---\n{}",
        doc(serde_norway::to_string(&m.secret)),
        doc(serde_norway::to_string(&m.service)),
        doc(serde_norway::to_string(&m.stateful_set))
    )
}

/// Reads [`to_yaml`]'s output back through the typed structures.
pub fn parse(yaml: &str) -> Result<Manifests, ParseError> {
    let (mut secret, mut service, mut stateful_set) = (None, None, None);
    let mut kinds = Vec::new();
    for doc in serde_norway::Deserializer::from_str(yaml) {
        let value = serde_norway::Value::deserialize(doc)?;
        let kind = value
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("no kind")
            .to_string();
        match kind.as_str() {
            "Secret" => secret = Some(serde_norway::from_value::<Secret>(value)?),
            "Service" => service = Some(serde_norway::from_value::<Service>(value)?),
            "StatefulSet" => stateful_set = Some(serde_norway::from_value::<StatefulSet>(value)?),
            _ => {}
        }
        kinds.push(kind);
    }
    match (secret, service, stateful_set) {
        (Some(secret), Some(service), Some(stateful_set)) => Ok(Manifests {
            secret,
            service,
            stateful_set,
        }),
        _ => Err(ParseError::AgentsShape(kinds.join(", "))),
    }
}

#[cfg(test)]
mod tests;
