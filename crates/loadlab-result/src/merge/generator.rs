//! The merged result's generator section: the parts' CPU summed (and per 100,000 requests of
//! the whole, warm-up included), their threads listed, the worst steal, and the first
//! saturated link.

use crate::run::{GeneratorHealth, RunResult};

pub(super) fn merge(parts: &[RunResult], completed: u64) -> GeneratorHealth {
    let first = &parts[0].generator;
    let user: f64 = parts.iter().map(|p| p.generator.cpu_user_s).sum();
    let system: f64 = parts.iter().map(|p| p.generator.cpu_system_s).sum();
    let warm_completed: u64 = parts
        .iter()
        .filter_map(|p| p.warmup.as_ref())
        .map(|w| w.requests.completed)
        .sum();
    let all = completed + warm_completed;
    GeneratorHealth {
        cpu_user_s: user,
        cpu_system_s: system,
        cpu_s_per_100k_requests: (all > 0).then(|| (user + system) * 100_000.0 / all as f64),
        thread_busy: parts
            .iter()
            .flat_map(|p| p.generator.thread_busy.iter().copied())
            .collect(),
        thread_waited_s: parts
            .iter()
            .flat_map(|p| p.generator.thread_waited_s.iter().copied())
            .collect(),
        nofile: first.nofile,
        pm_qos: first.pm_qos.clone(),
        max_steal: parts
            .iter()
            .filter_map(|p| p.generator.max_steal)
            .reduce(f64::max),
        busy_poll_idle_s: parts
            .iter()
            .filter_map(|p| p.generator.busy_poll_idle_s)
            .reduce(|a, b| a + b),
        // The parts' links are their own: the merge keeps the first saturated one (the load
        // was capped there), else none (each part's stays in its own result).
        link: parts
            .iter()
            .filter_map(|p| p.generator.link.clone())
            .find(|l| l.saturated),
    }
}
