//! An experiment's lab targets as their manifests describe them, read once before it is
//! planned: an arm's protocol that needs an optional part of the contract (HTTP/3 needs the
//! `http3` capability) is refused on a target that does not declare it, before anything is
//! built; and each target's recommended warm-up is applied ([`crate::warmup`]). Reads
//! manifests only: builds and runs nothing, and prints nothing (it returns notes).

use crate::file::{Experiment, Protocol, Source};
use loadlab_lab::manifest::HTTP3;
use loadlab_lab::Lab;
use std::path::Path;

impl Experiment {
    /// Refuses a lab-target variant whose target lacks what one of the arms' protocols needs:
    /// `http3` serves HTTP/3 beside HTTPS (targets/CONTRACT.md); without it every request of
    /// an http3 arm would fail. The message names the targets in `lab` that declare it. A
    /// target on an agent's host that this machine's lab does not have is that host's to
    /// check (`loadlab lab verify NAME --tls` there).
    pub fn check_target_capabilities(&self, lab: &Lab) -> Result<(), String> {
        if !self.protocols().contains(&Protocol::Http3) {
            return Ok(());
        }
        for variant in &self.variants {
            let Source::Target(name) = &variant.source else {
                continue;
            };
            let target = match lab.target(name) {
                Ok(t) => t,
                Err(_) if variant.agent.is_some() => continue,
                Err(e) => return Err(format!("[[variant]] {}: {e}", variant.name)),
            };
            if target.has(HTTP3) {
                continue;
            }
            let serving = lab.with_capability(HTTP3);
            let fix = if serving.is_empty() {
                ", nor does any target in this lab: use protocol https or http2, or give a target \
                 HTTP/3 as targets/CONTRACT.md says"
                    .to_string()
            } else {
                format!(
                    "; compare targets that do ({}), or use protocol https or http2",
                    serving.join(", ")
                )
            };
            return Err(format!(
                "[[variant]] {}: protocol http3 needs a target that serves HTTP/3 beside HTTPS \
                 (capabilities = [\"http3\"] in its target.toml), and target {name} does not \
                 declare it{fix}",
                variant.name
            ));
        }
        Ok(())
    }

    /// Reads the lab at `targets` (or the nearest `targets/` above the working directory),
    /// opened only when a lab-target variant runs on this machine: refuses what its targets
    /// cannot serve ([`Experiment::check_target_capabilities`]), then applies their
    /// recommended warm-ups ([`Experiment::apply_target_warmups`]) and returns those notes.
    pub fn read_lab_targets_from(&mut self, targets: Option<&Path>) -> Result<Vec<String>, String> {
        let any_target = self
            .variants
            .iter()
            .any(|v| matches!(v.source, Source::Target(_)) && v.agent.is_none());
        if !any_target {
            return Ok(Vec::new());
        }
        let lab = crate::runner::open_lab(targets).map_err(|e| e.to_string())?;
        self.check_target_capabilities(&lab)?;
        self.apply_target_warmups(&lab)
    }
}
