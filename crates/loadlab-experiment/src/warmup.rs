//! A lab target's recommended warm-up (`warmup_secs` in its `target.toml`: a JIT runtime
//! needs tens of seconds) applied to an experiment whose file sets no `warmup` of its own;
//! the file's `warmup`, or `--warmup`, always wins. Applied to the [`Experiment`] before it is
//! planned, so the plan, its expected time and its hash show the warm-up each arm gets. Reads
//! manifests only: builds and runs nothing, and prints nothing (it returns notes). The lab is
//! read by [`crate::targets`].

use crate::file::{Experiment, Source};
use loadlab_lab::Lab;

impl Experiment {
    /// Sets every arm's warm-up (`--warmup`), over the file's and any target's.
    pub fn set_warmup(&mut self, warmup_s: f64) {
        self.base.warmup_s = warmup_s;
        self.warmup_given = true;
        for variant in &mut self.variants {
            variant.target_warmup_s = None;
        }
    }

    /// Gives each lab-target variant its manifest's warm-up when the file set none, and
    /// returns a note per variant changed (`rust-axum: warm-up 2s, its target's warmup_secs`).
    /// A manifest without `warmup_secs` (0) leaves the file's default.
    pub fn apply_target_warmups(&mut self, lab: &Lab) -> Result<Vec<String>, String> {
        if self.warmup_given {
            return Ok(Vec::new());
        }
        let mut notes = Vec::new();
        for variant in &mut self.variants {
            let Source::Target(name) = &variant.source else {
                continue;
            };
            let secs = match lab.target(name) {
                Ok(t) => t.manifest.warmup_secs,
                // On an agent's host: this machine's lab may not have it (the file's warm-up
                // stands).
                Err(_) if variant.agent.is_some() => continue,
                Err(e) => return Err(format!("[[variant]] {}: {e}", variant.name)),
            };
            if secs == 0 {
                continue;
            }
            variant.target_warmup_s = Some(secs as f64);
            notes.push(format!(
                "{}: warm-up {secs}s, the warmup_secs of target {name} (the file sets no warmup)",
                variant.name
            ));
        }
        Ok(notes)
    }
}
