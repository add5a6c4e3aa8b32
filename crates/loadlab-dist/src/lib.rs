//! Running one load as N shards on engines that already exist, instead of a home-made one.
//!
//! # Layout
//!
//! - [`frame`]: a shard's result printed as a framed base64 block on standard output, and
//!   every such block found again in logs (how results come back from Kubernetes pods).
//! - [`k8s`]: an Indexed Job (one pod per shard, spread over nodes) and the ConfigMap with
//!   the plan, built from the typed Kubernetes API structures, written as YAML and read back.
//! - [`agents`]: generator agents for a fleet (`dist k8s --agents`): a StatefulSet of
//!   `loadlab agent --generator` pods, their headless Service and the Secret with their
//!   token; and the same agents found again from what kubectl says of them.
//! - [`kubectl`]: what is asked of a cluster, through `kubectl`: a Job's pods' logs; the
//!   agents' StatefulSet, pods, logs and Secret.
//! - [`ansible`]: the playbook (copy the binary, start the shards together, fetch, merge) and
//!   the extra variables that `loadlab dist ansible` hands `ansible-playbook`.
//!
//! The shards themselves are plain `loadlab run --shard I/N`, and their results merge with
//! `loadlab_result::merge_shards`; this crate only carries plans out and results back (and
//! reads where a cluster's agents are). It must not measure anything, nor parse run flags
//! (the CLI checks them before they leave).

pub mod agents;
pub mod ansible;
pub mod frame;
pub mod k8s;
pub mod kubectl;
