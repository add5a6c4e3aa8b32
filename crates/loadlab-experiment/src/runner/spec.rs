//! One planned run as a session: the arm's server (a lab target, a command, a URL or an
//! agent's), its load, limits and link, and the metrics labels that tell the run apart.

use super::preflight::MockUpstream;
use crate::file::{Experiment, Protocol, Source};
use crate::plan::{Arm, PlannedRun};
use loadlab_engine::RunSpec;
use loadlab_lab::Lab;
use loadlab_probe::{Limits, LimitsMode};
use loadlab_session::metrics::MetricsPlan;
use loadlab_session::{AgentEndpoint, AgentSpec, BusyPoll, ServerKind, ServerSpec, SessionSpec};
use std::path::Path;
use std::time::Duration;

/// One run's metrics plan: the experiment's (unless given), the arm as the variant, and a
/// run id of its own so each run's counters stay apart.
pub(super) fn run_metrics(
    plan: &MetricsPlan,
    experiment: &Experiment,
    arm: &str,
    run: &PlannedRun,
) -> MetricsPlan {
    let mut plan = plan.clone();
    if plan.labels.experiment.is_empty() {
        plan.labels.experiment = experiment.name.clone();
    }
    plan.labels.variant = arm.to_string();
    plan.labels.run_id = if plan.labels.run_id.is_empty() {
        format!("{}-run{}", experiment.name, run.index + 1)
    } else {
        format!("{}-run{}", plan.labels.run_id, run.index + 1)
    };
    plan
}

/// The session for one run of an arm.
pub(super) fn session_spec(
    experiment: &Experiment,
    arm: &Arm,
    lab: Option<&Lab>,
    upstream: Option<&MockUpstream>,
    mode: LimitsMode,
) -> Result<SessionSpec, String> {
    let s = &arm.settings;
    let variant = &experiment.variants[arm.variant];
    // A scenario's requests go to the variant's server: its URL, or the launched one.
    let first_path = if s.scenario.is_some() {
        "/"
    } else {
        s.paths[0].as_str()
    };
    let url = match &variant.source {
        Source::Url(base) => format!("{base}{first_path}"),
        _ => first_path.to_string(),
    };
    let scenario = match &s.scenario {
        Some(path) => Some(std::sync::Arc::new(
            loadlab_engine::scenario::Scenario::load(Path::new(path), &[])
                .map_err(|e| e.to_string())?,
        )),
        None => None,
    };
    let run = RunSpec {
        url: url.clone(),
        scenario,
        paths: if s.paths.len() > 1 {
            s.paths.clone()
        } else {
            Vec::new()
        },
        method: s.method.clone(),
        headers: s.headers.clone(),
        body: s.body.clone().into_bytes(),
        connections: s.connections,
        rate: s.rate,
        stages: s.stages.clone(),
        threads: s.threads,
        duration: Some(Duration::from_secs_f64(s.duration_s)),
        warmup: Duration::from_secs_f64(s.warmup_s),
        timeout: Duration::from_secs_f64(s.timeout_s),
        keepalive: s.keepalive,
        http2: s.protocol == Protocol::Http2,
        http3: s.protocol == Protocol::Http3,
        // `[load] http3_0rtt` with a protocol axis is meant for the arms over HTTP/3.
        http3_0rtt: s.http3_0rtt && s.protocol == Protocol::Http3,
        streams: if s.protocol.multiplexed() {
            s.streams.unwrap_or(1)
        } else {
            1
        },
        // `[load] pipeline` with a protocol axis is meant for the arms over HTTP/1.1.
        pipeline: if s.protocol.multiplexed() {
            1
        } else {
            s.pipeline.unwrap_or(1)
        },
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: match &experiment.cacert {
                // Only an https:// variant is trusted through it (a plain one has no TLS).
                Some(path) if url.starts_with("https://") || url.starts_with("wss://") => {
                    Some(std::fs::read(path).map_err(|e| {
                        format!("[load] cacert {path:?}: cannot read it ({e}); check the path")
                    })?)
                }
                _ => None,
            },
            ..Default::default()
        },
        ws: s.ws.as_ref().map(|w| w.spec()).unwrap_or_default(),
        ..RunSpec::default()
    };
    let kind = match &variant.source {
        Source::Target(name) => Some(ServerKind::Target {
            name: name.clone(),
            dir: lab.map(|l| l.root().to_path_buf()),
            upstream: upstream.map(|u| u.url.clone()),
        }),
        Source::Exec(cmd) => Some(ServerKind::Exec(cmd.clone())),
        // Through an agent, a running server is watched on its host (the URL's port there).
        Source::Url(_) if variant.agent.is_some() => Some(ServerKind::AgentDefault),
        Source::Url(_) => None,
    };
    let server = kind.map(|kind| {
        let mut spec = ServerSpec::new(kind);
        spec.mode = mode;
        spec.env = s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        spec.healthz = s.healthz.clone();
        // A server loadlab starts speaks the arm's protocol: over TLS (https, http3) it gets
        // a throwaway CA and certificate (`TLS_CERT`, `TLS_KEY`) that the run alone trusts, so
        // the URL is https:// and `[load] cacert` (for URL variants) plays no part. http2
        // stays prior knowledge over plain TCP (h2c), as to a plain URL.
        spec.tls = s.protocol.encrypted() && spec.launches();
        match &variant.agent {
            Some(a) => {
                // Limits are parsed on the agent's host, against its CPUs.
                spec.agent = Some(AgentSpec {
                    endpoint: AgentEndpoint {
                        url: a.url.clone(),
                        token_file: a.token_file.clone().into(),
                        fingerprint: a.fingerprint.clone(),
                        cacert: a.cacert.clone().map(Into::into),
                    },
                    cpus: s.cpus.map(|c| c.to_string()),
                    memory: s.memory.clone(),
                    pin: s.pin.clone(),
                });
                if let ServerKind::Target { dir, .. } = &mut spec.kind {
                    *dir = None;
                }
            }
            None => {
                spec.limits = limits(s);
                spec.link = link(s);
            }
        }
        spec
    });
    Ok(SessionSpec {
        run,
        server,
        busy_poll: BusyPoll::Auto,
    })
}

/// The arm's limits; values were checked when the file was read, except these parses, which
/// the session repeats and reports.
fn limits(s: &crate::file::Settings) -> Limits {
    let online = loadlab_probe::limits::online_cpus();
    Limits {
        cpus: s.cpus,
        memory: s
            .memory
            .as_deref()
            .and_then(|m| loadlab_probe::limits::parse_memory(m).ok()),
        pin: s
            .pin
            .as_deref()
            .and_then(|p| loadlab_probe::limits::parse_cpu_list(p, online).ok()),
    }
}

/// The arm's capped link; rates were checked when the file was read.
fn link(s: &crate::file::Settings) -> Option<loadlab_machine::LinkSpec> {
    let b = &s.bandwidth;
    let rate = |v: &Option<String>| {
        v.as_deref()
            .and_then(|r| loadlab_machine::Rate::parse(r).ok())
    };
    let link = loadlab_machine::LinkSpec {
        up: rate(&b.up).or(rate(&b.both)),
        down: rate(&b.down).or(rate(&b.both)),
        ..loadlab_machine::LinkSpec::default()
    };
    (!link.is_empty()).then_some(link)
}
