//! loadlab's scenarios: user journeys of named steps, each a request (or a page of requests),
//! run over and over by every virtual user. The file format is docs/scenario-format.md.
//!
//! # Use
//!
//! - [`Scenario::load`]`(path, overrides)`: reads a scenario file, applies `--var NAME=VALUE`
//!   overrides, and checks and compiles it.
//! - [`Scenario::from_toml_str`]`(text, base_dir)`: the same from text (feeder and body files
//!   relative to `base_dir`), without overrides: what an importer calls to validate the file
//!   it writes. [`Scenario::parse`] takes overrides too.
//! - [`file::ScenarioFile`]: the file's serde model, for writing one (`toml::to_string`).
//!
//! Every refusal is a [`ScenarioError`] naming the step (or feeder) and the field, and the fix.
//!
//! # Layout
//!
//! - [`file`]: the file as written (serde); nothing checked beyond its shape.
//! - `compile`: from the file to a [`Scenario`]: every check, templates compiled once.
//! - [`template`]: `{{NAME}}` templates; values known at load are inlined, only variables a
//!   capture or a feeder sets stay as slots.
//! - [`request`]: a request on the wire; a constant one is encoded once, at load.
//! - [`capture`], [`check`]: what a response sets and whether it passes (pure functions).
//! - [`grpc`]: a gRPC step (the method, its message and metadata as templates) and where the
//!   scenario's schema is; the engine compiles the schema and encodes the messages.
//! - [`ws`]: a WebSocket step (its URL, upgrade headers and messages as templates).
//! - [`feeder`]: CSV rows per iteration; [`think`]: think times and the seeded generator;
//!   [`cookies`]: a virtual user's cookie jar.
//!
//! This crate does no network I/O and keeps no clock: the engine runs scenarios, this crate
//! says what to send and what a response means.

pub mod capture;
pub mod check;
mod compile;
pub mod cookies;
mod error;
pub mod feeder;
pub mod file;
pub mod grpc;
pub mod origin;
pub mod placeholder;
pub mod request;
pub mod template;
pub mod think;
pub mod ws;

pub use capture::{Capture, Response};
pub use check::{judge, Check, Verdict};
pub use cookies::CookieJar;
pub use error::ScenarioError;
pub use feeder::Feeder;
pub use request::Request;
pub use think::{Rng, Think};

use std::path::{Path, PathBuf};

/// The most requests of a page fetched at once from one host, as browsers do.
pub const PAGE_CONNECTIONS_PER_HOST: usize = 6;

/// The most steps a scenario may have; the compiler refuses more, naming both counts. A
/// step costs a few hundred bytes in each worker thread until it is answered, and then what
/// its answers' response times take (16 bytes a distinct value, at most a histogram's 264
/// KiB); the result carries each step's figures and histogram, a report a row each. 20,000
/// steps (issue 46's 1.2 MB file, which took 21 GB before steps cost what they record) is
/// already a journey no one reads whole.
pub const MAX_STEPS: usize = 20_000;

/// How an iteration chooses its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every step, in order.
    Sequence,
    /// One step, chosen by weight.
    Mix,
}

/// Where every request of the scenario goes: one scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub https: bool,
    /// Without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// The `Host` header's value: host, and the port when not the scheme's default.
    pub authority: String,
}

impl Origin {
    /// `http://host:port`.
    pub fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.https { "https" } else { "http" },
            self.authority
        )
    }
}

/// Where a variable's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarSource {
    /// `[variables]`.
    Default,
    /// `--var`.
    Override,
    /// A feeder's column.
    Feeder,
    /// A step's capture.
    Capture,
}

/// A variable of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    pub source: VarSource,
    /// For feeder and capture variables: the slot in a virtual user's values.
    pub slot: Option<usize>,
}

/// One step: a request, or a page of requests fetched together.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// One request; several for a page.
    pub requests: Vec<Request>,
    /// Listed with `requests` (a page), even if only one.
    pub page: bool,
    pub think: Think,
    /// With [`Mode::Mix`]: the relative chance of this step, as a share of the heaviest
    /// step's (which has 1), so that the weights' sum stays finite.
    pub weight: f64,
    pub captures: Vec<Capture>,
    pub checks: Vec<Check>,
    /// A gRPC call instead of an HTTP request (`requests` then holds its POST, with the
    /// message's JSON as the body: what counts and descriptions read).
    pub grpc: Option<grpc::GrpcStep>,
    /// A WebSocket opened, its messages sent and answered, then closed. `requests` then holds
    /// its upgrade once per message (each message counts as a request), and `page` is set:
    /// the step's latency is its whole time, each message's its own (as a page's requests).
    pub ws: Option<ws::WsStep>,
}

impl Step {
    /// Whether judging the response needs its body (a JSON path, a regex, a body check).
    pub fn needs_body(&self) -> bool {
        self.captures.iter().any(Capture::needs_body) || self.checks.iter().any(Check::needs_body)
    }

    /// The names of the step's checks then captures, as [`Verdict::CheckFailed`] indexes them.
    pub fn assertion_names(&self) -> Vec<String> {
        check::assertion_names(&self.checks, &self.captures)
    }

    /// Judges one response of this step (see [`check::judge`]).
    pub fn judge(&self, response: &Response, values: &mut [String]) -> Verdict {
        check::judge(&self.checks, &self.captures, response, values)
    }

    /// Judges a gRPC step's answer, which ended with status `code` (see
    /// [`check::judge_call`]); its body is the answer message as JSON.
    pub fn judge_call(&self, response: &Response, code: u32, values: &mut [String]) -> Verdict {
        check::judge_call(&self.checks, &self.captures, response, Some(code), values)
    }

    /// What a report shows for the step: `GET /blog/{{BLOG_ID}}`, `page of 19 requests`, or
    /// `gRPC shop.v1.Cart/Add`.
    pub fn describe(&self) -> String {
        if let Some(g) = &self.grpc {
            return format!("gRPC {}", g.method);
        }
        if let (Some(w), Some(r)) = (&self.ws, self.requests.first()) {
            let n = w.messages.len();
            let s = if n == 1 { "" } else { "s" };
            return format!("WebSocket {} ({n} message{s})", r.url_text);
        }
        match self.requests.as_slice() {
            [one] if !self.page => format!("{} {}", one.method, one.url_text),
            many => format!("page of {} requests", many.len()),
        }
    }
}

/// A checked, compiled scenario: what the engine runs.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub mode: Mode,
    pub origin: Origin,
    pub variables: Vec<Variable>,
    /// The value each slot starts with in every virtual user (a default, or empty).
    pub initial_values: Vec<String>,
    pub feeders: Vec<Feeder>,
    pub steps: Vec<Step>,
    /// Where the gRPC steps' schema is (`[grpc]`); `None` without it.
    pub grpc: Option<grpc::GrpcSchema>,
    /// The file it came from, when it came from one.
    pub path: Option<PathBuf>,
    /// What it was compiled from, whole: what a generator compiles the same scenario from.
    pub source: ScenarioSource,
}

/// A scenario as it travels to a generator: its file (TOML), the `--var` overrides, and
/// every file it names (feeders, bodies) by the name it gives them, with their contents.
/// [`Scenario::from_source`] compiles it without reading a path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScenarioSource {
    pub text: String,
    pub overrides: Vec<(String, String)>,
    pub files: std::collections::BTreeMap<String, Vec<u8>>,
    /// The gRPC steps' schema compiled where the scenario was loaded
    /// ([`Scenario::with_grpc_descriptors`]): a generator uses it instead of the `.proto`
    /// files (which do not travel) or a reflection of its own.
    pub grpc_descriptors: Option<grpc::GrpcDescriptors>,
}

impl Scenario {
    /// Reads, checks and compiles a scenario file; `overrides` are `--var NAME=VALUE` pairs.
    pub fn load(path: &Path, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut scenario =
            Scenario::parse(&text, base, overrides).map_err(|e| e.with_path(path))?;
        scenario.path = Some(path.to_path_buf());
        Ok(scenario)
    }

    /// Checks and compiles scenario text; files it names are relative to `base_dir`. What an
    /// importer calls to validate what it writes.
    pub fn from_toml_str(text: &str, base_dir: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::parse(text, base_dir, &[])
    }

    /// [`Scenario::from_toml_str`] with `--var` overrides.
    pub fn parse(
        text: &str,
        base_dir: &Path,
        overrides: &[(String, String)],
    ) -> Result<Scenario, ScenarioError> {
        let file: file::ScenarioFile = toml::from_str(text).map_err(|e| ScenarioError::Syntax {
            path: None,
            message: e.to_string().trim_end().to_string(),
        })?;
        Scenario::compile(&file, base_dir, overrides)
    }

    /// Checks and compiles a scenario already in memory.
    pub fn compile(
        file: &file::ScenarioFile,
        base_dir: &Path,
        overrides: &[(String, String)],
    ) -> Result<Scenario, ScenarioError> {
        compile::compile(file, compile::Files::dir(base_dir), overrides)
    }

    /// Compiles a scenario that travelled as its [`ScenarioSource`]: the same scenario as
    /// the one it was taken from, and no file read (a name the scenario gives that did not
    /// come with it is an error).
    pub fn from_source(source: &ScenarioSource) -> Result<Scenario, ScenarioError> {
        let file: file::ScenarioFile =
            toml::from_str(&source.text).map_err(|e| ScenarioError::Syntax {
                path: None,
                message: e.to_string().trim_end().to_string(),
            })?;
        compile::compile(
            &file,
            compile::Files::Given(&source.files, source.grpc_descriptors.as_ref()),
            &source.overrides,
        )
    }

    /// This scenario with its gRPC schema resolved to `set` (a `FileDescriptorSet`, its
    /// `.proto` files compiled or the server's reflection asked): every run of it (each probe
    /// of a search) reads the schema from there, and it travels with the scenario's source.
    pub fn with_grpc_descriptors(mut self, set: grpc::GrpcDescriptors) -> Scenario {
        self.source.grpc_descriptors = Some(set.clone());
        self.grpc = Some(grpc::GrpcSchema::Compiled(set));
        self
    }

    /// Whether any step is a WebSocket (the scenario then runs over HTTP/1.1, or with
    /// `--http2` opens them by RFC 8441; never over HTTP/3).
    pub fn has_ws(&self) -> bool {
        self.steps.iter().any(|s| s.ws.is_some())
    }

    /// Whether any step is a gRPC call (the scenario then runs over HTTP/2).
    pub fn has_grpc(&self) -> bool {
        self.steps.iter().any(|s| s.grpc.is_some())
    }

    /// True when no request ever changes during the run (no capture, no feeder): every send
    /// writes bytes encoded at load, unless the server sets cookies.
    pub fn is_constant(&self) -> bool {
        self.feeders.is_empty()
            && self.steps.iter().all(|s| {
                s.captures.is_empty()
                    && s.requests.iter().all(Request::is_constant)
                    && s.ws
                        .as_ref()
                        .is_none_or(|w| w.messages.iter().all(|m| m.is_constant()))
            })
    }

    /// Requests in one iteration (in a mix, the weighted mean).
    pub fn requests_per_iteration(&self) -> f64 {
        match self.mode {
            Mode::Sequence => self.steps.iter().map(|s| s.requests.len() as f64).sum(),
            Mode::Mix => {
                let total: f64 = self.steps.iter().map(|s| s.weight).sum();
                self.steps
                    .iter()
                    .map(|s| s.weight / total * s.requests.len() as f64)
                    .sum()
            }
        }
    }

    /// With [`Mode::Mix`]: the step an iteration runs, drawn by weight.
    pub fn pick(&self, rng: &mut Rng) -> usize {
        let total: f64 = self.steps.iter().map(|s| s.weight).sum();
        let mut x = rng.unit() * total;
        for (i, s) in self.steps.iter().enumerate() {
            if x < s.weight {
                return i;
            }
            x -= s.weight;
        }
        self.steps.len() - 1
    }

    /// A new virtual user's variable values.
    pub fn new_values(&self) -> Vec<String> {
        self.initial_values.clone()
    }

    /// Takes this iteration's feeder rows into a virtual user's values.
    pub fn feed(&self, user: usize, iteration: u64, rng: &mut Rng, values: &mut [String]) {
        for f in &self.feeders {
            f.fill(user, iteration, rng, values);
        }
    }
}

#[cfg(test)]
mod tests;
