//! A scenario run's settings, checked: the scenario replaces the request flags, `--pace`
//! paces a closed loop's connections, `--rate`/`--stages` make an open loop of iterations,
//! `--new-connection-share` mixes new connections into keep-alive ones. A single-URL run with
//! `--pace` or `--new-connection-share` becomes a one-step scenario, so that one runner does
//! both. Each runs over HTTP/1.1, HTTP/2 or HTTP/3: over the last two a virtual user holds
//! one connection and sends each request on a stream of it (`engine::scenario::mux`).

use super::{reject, ConfigError, Model, RunSpec, ScenarioRun};
use loadlab_scenario::file::{BodyFile, OrderedMap, ScenarioFile, StepFile};
use loadlab_scenario::Scenario;
use std::sync::Arc;

type GrpcStep = Arc<crate::grpc::steps::StepCall>;

impl RunSpec {
    /// The URL the run connects to: the one given, or the scenario's own origin.
    pub(super) fn effective_url(&self) -> String {
        match &self.scenario {
            Some(s) if self.url.is_empty() => format!("{}/", s.origin.url()),
            _ => self.url.clone(),
        }
    }

    pub(super) fn scenario_run(
        &self,
        model: &Model,
        users: usize,
    ) -> Result<Option<Arc<ScenarioRun>>, ConfigError> {
        let share = self.new_connection_share.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&share) {
            return Err(reject(
                "new_connection_share",
                format!("{share} is not a share; give a number from 0 to 1, e.g. 0.3"),
            ));
        }
        if self.new_connection_share.is_some() && !self.keepalive {
            return Err(reject(
                "new_connection_share",
                "cannot be combined with --no-keepalive (which is a share of 1); give one of them",
            ));
        }
        if let Some(pace) = self.pace {
            if pace.is_zero() {
                return Err(reject("pace", "must be longer than 0; try --pace 1s"));
            }
            if !matches!(model, Model::Closed { stages: None }) {
                return Err(reject(
                    "pace",
                    "paces a closed loop's connections (-c); an open loop's schedule (--rate, \
                     --stages) already says when requests go: drop one of them",
                ));
            }
        }
        let wants_runner =
            self.scenario.is_some() || self.pace.is_some() || self.new_connection_share.is_some();
        if !wants_runner {
            return Ok(None);
        }
        if self.streams > 1 {
            // A user's requests go one after another (a page's at once, as streams of its
            // one connection): streams shared by several users are not what a user does.
            return Err(reject(
                "streams",
                "a scenario's virtual user (and a paced one) holds its own connection and sends \
                 a page's requests as concurrent streams on it; drop --streams and give more \
                 users with -c (or --max-connections for --rate)",
            ));
        }
        if !self.paths.is_empty() {
            return Err(reject(
                "paths",
                "a rotation of paths cannot be combined with a scenario, --pace or \
                 --new-connection-share; list the paths as steps of a scenario",
            ));
        }
        if let Model::Closed { stages: Some(_) } = model {
            return Err(reject(
                "closed_stages",
                "cannot stage a scenario's virtual users yet; give -c N, or --stages without \
                 --closed for an open loop of iterations",
            ));
        }
        let (scenario, implicit) = match &self.scenario {
            Some(s) => {
                if self.method != "GET" || !self.headers.is_empty() || !self.body.is_empty() {
                    return Err(reject(
                        "scenario",
                        "sets each step's method, headers and body; drop -m, -H and --body \
                         (headers for every step go in the scenario's [defaults])",
                    ));
                }
                (Scenario::clone(s), false)
            }
            None => (self.one_step()?, true),
        };
        let grpc = self.grpc_steps(&scenario)?;
        Ok(Some(Arc::new(ScenarioRun {
            grpc,
            scenario,
            users,
            pace: self.pace,
            new_connection_share: if self.keepalive { share } else { 1.0 },
            seed: self.seed,
            implicit,
        })))
    }

    /// A scenario's gRPC steps prepared (see [`crate::grpc::steps`]): the schema compiled, or
    /// asked of the server by reflection (once, here, on a connection of its own), unless
    /// [`RunSpec::resolve_grpc_schema`] resolved it before.
    fn grpc_steps(&self, scenario: &Scenario) -> Result<Vec<Option<GrpcStep>>, ConfigError> {
        if !scenario.has_grpc() {
            return Ok(Vec::new());
        }
        let target = self.reflect_target(scenario)?;
        crate::grpc::steps::prepare(scenario, self.timeout, target.as_ref())
            .map_err(|m| reject("scenario", m))
    }

    /// Resolves the scenario's gRPC schema once, where the run is set up (the session's
    /// preparation): its `.proto` files compiled, or the server asked by reflection, into
    /// descriptors the scenario then carries ([`Scenario::with_grpc_descriptors`]). Every
    /// later validation (each probe of a search or sweep) reads them, and a fleet's load
    /// carries them to its generators; no reflection is asked again. A reflecting scenario
    /// whose URL is still a path (a server loadlab has yet to start) is left as it is: its
    /// validation says what to do.
    pub fn resolve_grpc_schema(&mut self) -> Result<(), ConfigError> {
        use loadlab_scenario::grpc::GrpcSchema;
        let Some(scenario) = &self.scenario else {
            return Ok(());
        };
        match &scenario.grpc {
            Some(GrpcSchema::Compiled(_)) | None => return Ok(()),
            Some(GrpcSchema::Reflect) if self.effective_url().starts_with('/') => return Ok(()),
            Some(_) => {}
        }
        let target = self.reflect_target(scenario)?;
        let set = crate::grpc::steps::resolve(scenario, target.as_ref())
            .map_err(|m| reject("scenario", m))?;
        if let Some(set) = set {
            let resolved = Scenario::clone(scenario).with_grpc_descriptors(set);
            self.scenario = Some(Arc::new(resolved));
        }
        Ok(())
    }

    /// Where a reflecting scenario asks for its schema (`None` for any other).
    fn reflect_target(
        &self,
        scenario: &Scenario,
    ) -> Result<Option<crate::grpc::reflect::Target>, ConfigError> {
        match scenario.grpc {
            Some(loadlab_scenario::grpc::GrpcSchema::Reflect) => Some(
                crate::grpc::reflect::Target::new(&self.effective_url(), &self.tls, self.timeout)
                    .map_err(|e| reject("scenario", e.to_string())),
            )
            .transpose(),
            _ => Ok(None),
        }
    }

    /// The single request as a one-step scenario. `{{` is doubled: a URL or body is sent as
    /// given, never read as a template.
    fn one_step(&self) -> Result<Scenario, ConfigError> {
        let literal = |s: &str| s.replace("{{", "{{{{");
        let body = if self.body.is_empty() {
            None
        } else {
            let text = std::str::from_utf8(&self.body).map_err(|_| {
                reject(
                    "body",
                    "is not UTF-8 text, which --pace and --new-connection-share need; put it \
                     in a scenario as body.file",
                )
            })?;
            Some(BodyFile {
                raw: Some(literal(text)),
                ..BodyFile::default()
            })
        };
        let headers = self
            .headers
            .iter()
            .filter_map(|h| h.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), literal(v.trim())))
            .collect::<OrderedMap<String>>();
        let file = ScenarioFile {
            name: "url".into(),
            steps: vec![StepFile {
                name: "request".into(),
                method: Some(self.method.clone()),
                url: Some(literal(&self.url)),
                headers,
                body,
                ..StepFile::default()
            }],
            ..ScenarioFile::default()
        };
        Scenario::compile(&file, std::path::Path::new("."), &[])
            .map_err(|e| reject("url", e.to_string()))
    }
}
