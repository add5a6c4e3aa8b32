//! `loadlab dist k8s`: the manifests for N shards on Kubernetes, built from the typed API
//! structures of `k8s-openapi` (valid by construction), written as YAML, and read back
//! through the same types ([`parse`]).
//!
//! - a ConfigMap holding the plan: the run flags, one per line (`args`), and any file they
//!   name (a request body, a CA), mounted at [`PLAN_DIR`];
//! - an Indexed Job (`completionMode: Indexed`, `completions = parallelism = N`): pod k runs
//!   `loadlab dist pod --shards N --plan PLAN_DIR/args`, which is `loadlab run --shard
//!   JOB_COMPLETION_INDEX+1/N --framed` with the plan's flags (no shell: the FROM scratch image
//!   has none), and prints its result in a frame that `loadlab dist collect --k8s` reads from
//!   its log;
//!   `backoffLimit: 0`, because a shard run again would start late and load the target
//!   twice: a failed shard is reported missing instead;
//! - CPU and memory requests equal to the limits (the Guaranteed class: a shard is neither
//!   throttled below what it asked for nor squeezed by neighbours), and pod anti-affinity on
//!   `kubernetes.io/hostname`, so that no two shards share a node (a generator sharing a node
//!   with another is the bottleneck the shards were meant to remove).

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, PodAffinityTerm, PodAntiAffinity,
    PodSpec, PodTemplateSpec, ResourceRequirements, Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::ByteString;
use serde::Deserialize as _;
use std::collections::BTreeMap;

/// Where the plan's ConfigMap is mounted in each pod.
pub const PLAN_DIR: &str = "/etc/loadlab";
/// The label every object and pod of one load test carries, valued with its name.
pub const RUN_LABEL: &str = "loadlab.dev/run";
const NODE_KEY: &str = "kubernetes.io/hostname";

/// How strictly shards keep off each other's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Never two shards on one node: with fewer nodes than shards, the rest wait (Pending).
    Required,
    /// Apart where the scheduler can; on a small cluster some shards share a node.
    Preferred,
}

/// What the manifests are made from.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The Job's name (and the ConfigMap's, with `-plan`).
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub shards: u32,
    /// The run flags and URL, already pointing at files under [`PLAN_DIR`].
    pub args: Vec<String>,
    /// Files the flags name: key (a file name under [`PLAN_DIR`]) and bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// Per shard, e.g. `2` and `1Gi`.
    pub cpu: String,
    pub memory: String,
    pub spread: Spread,
}

/// The ConfigMap and the Job.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    pub plan: ConfigMap,
    pub job: Job,
}

/// The plan's flags read back from the ConfigMap's `args`: one per line, as [`manifests`]
/// writes them (so values with spaces survive; the last newline ends the last flag).
pub fn plan_args(text: &str) -> Vec<String> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    text.split('\n').map(str::to_string).collect()
}

pub fn manifests(plan: &Plan) -> Manifests {
    let labels: BTreeMap<String, String> = [
        ("app.kubernetes.io/name".to_string(), "loadlab".to_string()),
        (RUN_LABEL.to_string(), plan.name.clone()),
    ]
    .into();
    let meta = |name: String| ObjectMeta {
        name: Some(name),
        namespace: plan.namespace.clone(),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    let config_name = format!("{}-plan", plan.name);
    let mut data = BTreeMap::new();
    let mut binary = BTreeMap::new();
    let mut args = plan.args.join("\n");
    args.push('\n');
    data.insert("args".to_string(), args);
    for (key, bytes) in &plan.files {
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                data.insert(key.clone(), text.to_string());
            }
            Err(_) => {
                binary.insert(key.clone(), ByteString(bytes.clone()));
            }
        }
    }
    let config = ConfigMap {
        metadata: meta(config_name.clone()),
        data: Some(data),
        binary_data: (!binary.is_empty()).then_some(binary),
        ..ConfigMap::default()
    };
    let resources = guaranteed(&plan.cpu, &plan.memory);
    let affinity = apart(
        [(RUN_LABEL.to_string(), plan.name.clone())].into(),
        plan.spread,
    );
    let container = Container {
        name: "loadlab".to_string(),
        image: Some(plan.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        // No shell: `dist pod` reads the plan and the completion index itself, so the
        // FROM scratch image runs it.
        command: Some(
            [
                "loadlab",
                "dist",
                "pod",
                "--shards",
                &plan.shards.to_string(),
                "--plan",
                &format!("{PLAN_DIR}/args"),
            ]
            .map(String::from)
            .to_vec(),
        ),
        resources: Some(resources),
        volume_mounts: Some(vec![VolumeMount {
            name: "plan".to_string(),
            mount_path: PLAN_DIR.to_string(),
            read_only: Some(true),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    };
    let shards = i32::try_from(plan.shards).unwrap_or(i32::MAX);
    let job = Job {
        metadata: meta(plan.name.clone()),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".to_string()),
            completions: Some(shards),
            parallelism: Some(shards),
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".to_string()),
                    affinity: Some(affinity),
                    containers: vec![container],
                    volumes: Some(vec![Volume {
                        name: "plan".to_string(),
                        config_map: Some(ConfigMapVolumeSource {
                            name: config_name,
                            ..ConfigMapVolumeSource::default()
                        }),
                        ..Volume::default()
                    }]),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Manifests { plan: config, job }
}

/// CPU and memory requests equal to the limits: the Guaranteed class, so a pod is neither
/// throttled below what it asked for nor squeezed by neighbours.
pub(crate) fn guaranteed(cpu: &str, memory: &str) -> ResourceRequirements {
    let resources: BTreeMap<String, Quantity> = [
        ("cpu".to_string(), Quantity(cpu.to_string())),
        ("memory".to_string(), Quantity(memory.to_string())),
    ]
    .into();
    ResourceRequirements {
        requests: Some(resources.clone()),
        limits: Some(resources),
        ..ResourceRequirements::default()
    }
}

/// Pod anti-affinity on `kubernetes.io/hostname` among the pods `labels` select: no two on
/// one node (or apart where the scheduler can, with [`Spread::Preferred`]). A generator
/// sharing a node with another is the bottleneck that spreading the load was meant to remove.
pub(crate) fn apart(labels: BTreeMap<String, String>, spread: Spread) -> Affinity {
    let term = PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(labels),
            ..LabelSelector::default()
        }),
        topology_key: NODE_KEY.to_string(),
        ..PodAffinityTerm::default()
    };
    let anti_affinity = match spread {
        Spread::Required => PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![term]),
            ..PodAntiAffinity::default()
        },
        Spread::Preferred => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: term,
                },
            ]),
            ..PodAntiAffinity::default()
        },
    };
    Affinity {
        pod_anti_affinity: Some(anti_affinity),
        ..Affinity::default()
    }
}

/// The manifests as one YAML stream (`kubectl apply -f` reads it whole).
pub fn to_yaml(m: &Manifests) -> String {
    format!(
        "---\n{}---\n{}",
        serde_norway::to_string(&m.plan).expect("a ConfigMap serialises"),
        serde_norway::to_string(&m.job).expect("a Job serialises")
    )
}

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not YAML: {0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("expected a ConfigMap and a Job, found {0}")]
    Shape(String),
    #[error("expected a Secret, a Service and a StatefulSet, found {0}")]
    AgentsShape(String),
}

/// Reads [`to_yaml`]'s output back through the typed structures.
pub fn parse(yaml: &str) -> Result<Manifests, ParseError> {
    let (mut plan, mut job) = (None, None);
    let mut kinds = Vec::new();
    for doc in serde_norway::Deserializer::from_str(yaml) {
        let value = serde_norway::Value::deserialize(doc)?;
        let kind = value
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("no kind")
            .to_string();
        match kind.as_str() {
            "ConfigMap" => plan = Some(serde_norway::from_value::<ConfigMap>(value)?),
            "Job" => job = Some(serde_norway::from_value::<Job>(value)?),
            _ => {}
        }
        kinds.push(kind);
    }
    match (plan, job) {
        (Some(plan), Some(job)) => Ok(Manifests { plan, job }),
        _ => Err(ParseError::Shape(kinds.join(", "))),
    }
}

#[cfg(test)]
mod plan_tests {
    use super::plan_args;

    #[test]
    fn the_plan_reads_back_one_flag_a_line_spaces_and_empty_values_kept() {
        assert_eq!(
            plan_args("-H\nX-Test: a b\n-d\n60s\n--body\n\nhttp://x/\n"),
            ["-H", "X-Test: a b", "-d", "60s", "--body", "", "http://x/"]
        );
        assert_eq!(plan_args("http://x/"), ["http://x/"]);
        assert!(plan_args("").is_empty());
    }
}
