//! `loadlab dist k8s --agents`: generator agents for a fleet on Kubernetes, written as YAML
//! on stdout (a StatefulSet of `loadlab agent --generator` pods, their headless Service and
//! a Secret with a token made here; see `loadlab_dist::agents`). Runs then find them with
//! `--generators k8s:[NAMESPACE/]NAME` (`cmd::generators::k8s`).
//!
//! The token is made and checked by the agent's own rules (`loadlab_agent`), goes only into
//! the Secret on stdout, and is never printed on its own or put in an argument.

use crate::cmd::dist::K8sArgs;
use anyhow::Context as _;
use loadlab_dist::agents;
use std::process::ExitCode;

pub fn manifests(a: K8sArgs) -> anyhow::Result<ExitCode> {
    agents::check_name(&a.name).map_err(anyhow::Error::msg)?;
    let replicas = a.replicas.context("--agents needs --replicas N")?;
    let token = loadlab_agent::Token::generate_hex().map_err(anyhow::Error::msg)?;
    // The agent reads its token file by this rule: a token it would refuse must not leave.
    loadlab_agent::protocol::parse_token(&token).map_err(anyhow::Error::msg)?;
    let plan = agents::Plan {
        name: a.name.clone(),
        namespace: a.namespace.clone(),
        image: a.image,
        replicas,
        cpu: a.cpu,
        memory: a.memory,
        spread: a.spread.spread(),
        token,
    };
    print!("{}", agents::to_yaml(&agents::manifests(&plan)));
    let (ns_flag, source) = match &a.namespace {
        Some(ns) => (format!(" -n {ns}"), format!("k8s:{ns}/{}", a.name)),
        None => (String::new(), format!("k8s:{}", a.name)),
    };
    eprintln!(
        "next: kubectl apply -f FILE, then kubectl{ns_flag} rollout status statefulset/{name}, \
         then send load with --generators {source}. The token in the Secret is new: applying \
         this over running agents restarts them with it",
        name = a.name
    );
    Ok(ExitCode::SUCCESS)
}
