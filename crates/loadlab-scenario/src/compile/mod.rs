//! From a [`ScenarioFile`] to a [`Scenario`]: every value checked, every template compiled,
//! each error naming the step (or feeder) and the field. This file holds the scenario-level
//! pass (name, mode, variables and their slots, feeders, base URL, steps, think times); a
//! step's requests are in `request` (their URLs in `url`), its captures and checks in
//! `response`, the body forms in `body`. Nothing here does I/O beyond reading the feeder and
//! body files named by the scenario, once, at load, through [`Files`]: from the scenario's
//! directory (each file kept, so that the scenario can travel whole to a generator), or from
//! the files that travelled with it (a generator never reads a path its coordinator names).

mod body;
mod grpc;
mod request;
mod response;
mod url;
mod ws;

use crate::error::{invalid, ScenarioError};
use crate::feeder::{parse_csv, Feeder, Order};
use crate::file::{ScenarioFile, ThinkFile};
use crate::grpc::GrpcDescriptors;
use crate::origin::parse_origin;
use crate::template::{Escape, Lookup, Template};
use crate::think::{parse_duration, Think};
use crate::{Mode, Origin, Scenario, Step, VarSource, Variable};
use loadlab_result::format::thousands;
use request::{compile_requests, RequestCtx};
use response::{compile_capture, compile_check, StepKind};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// Where the files a scenario names are read from.
pub(crate) enum Files<'a> {
    /// Relative to this directory (the scenario file's); what was read is kept.
    Dir {
        base: &'a Path,
        read: RefCell<BTreeMap<String, Vec<u8>>>,
    },
    /// Only these, by the name the scenario gives: the files that came with it, and its
    /// gRPC schema compiled where it was loaded (a `FileDescriptorSet`), when it has one.
    Given(&'a BTreeMap<String, Vec<u8>>, Option<&'a GrpcDescriptors>),
}

impl Files<'_> {
    pub(crate) fn dir(base: &Path) -> Files<'_> {
        Files::Dir {
            base,
            read: RefCell::new(BTreeMap::new()),
        }
    }

    /// The file the scenario calls `name`; the error says what to do.
    pub(crate) fn read(&self, name: &str) -> Result<Vec<u8>, String> {
        match self {
            Files::Dir { base, read } => {
                if let Some(bytes) = read.borrow().get(name) {
                    return Ok(bytes.clone());
                }
                let path = base.join(name);
                let bytes = std::fs::read(&path).map_err(|e| {
                    format!(
                        "cannot read {} ({e}); the path is relative to the scenario file",
                        path.display()
                    )
                })?;
                read.borrow_mut().insert(name.to_string(), bytes.clone());
                Ok(bytes)
            }
            Files::Given(files, _) => files.get(name).cloned().ok_or_else(|| {
                format!(
                    "{name} did not come with the scenario (its coordinator sends every file \
                     the scenario names): send the scenario again from a current loadlab"
                )
            }),
        }
    }

    /// Every file read, by name.
    fn into_read(self) -> BTreeMap<String, Vec<u8>> {
        match self {
            Files::Dir { read, .. } => read.into_inner(),
            Files::Given(files, _) => files.clone(),
        }
    }

    /// The compiled gRPC schema that came with the scenario.
    fn grpc_descriptors(&self) -> Option<GrpcDescriptors> {
        match self {
            Files::Dir { .. } => None,
            Files::Given(_, set) => set.cloned(),
        }
    }
}

/// The variables as templates see them.
struct Vars {
    /// Known at load: defaults and overrides.
    fixed: HashMap<String, String>,
    /// Set during the run: name to slot.
    slots: HashMap<String, usize>,
}

impl Vars {
    fn lookup(&self, name: &str) -> Lookup<'_> {
        if let Some(slot) = self.slots.get(name) {
            Lookup::Dynamic(*slot)
        } else if let Some(v) = self.fixed.get(name) {
            Lookup::Static(v)
        } else {
            Lookup::Unknown
        }
    }

    fn template(
        &self,
        text: &str,
        escape: Escape,
        item: &str,
        field: &str,
    ) -> Result<Template, ScenarioError> {
        Template::compile(text, escape, &|n| self.lookup(n)).map_err(|m| invalid(item, field, m))
    }
}

pub(crate) fn compile(
    file: &ScenarioFile,
    files: Files<'_>,
    overrides: &[(String, String)],
) -> Result<Scenario, ScenarioError> {
    if file.name.trim().is_empty() {
        return Err(invalid(
            "scenario",
            "name",
            "empty; give the scenario a name, e.g. name = \"checkout\"",
        ));
    }
    let mode = match file.mode.as_deref() {
        None | Some("sequence") => Mode::Sequence,
        Some("mix") => Mode::Mix,
        Some(other) => {
            return Err(invalid(
                "scenario",
                "mode",
                format!("`{other}` is not a mode; use \"sequence\" or \"mix\""),
            ))
        }
    };
    if file.steps.is_empty() {
        return Err(invalid(
            "scenario",
            "steps",
            "none; add at least one [[steps]] with a name and a url",
        ));
    }
    if file.steps.len() > crate::MAX_STEPS {
        return Err(invalid(
            "scenario",
            "steps",
            format!(
                "{} steps; loadlab runs at most {} in one scenario (every worker thread keeps \
                 each step's figures, and the result and its reports carry them all): split \
                 the journey into several scenario files, or import fewer requests (a HAR \
                 recording's other hosts and static assets are left out unless asked for)",
                thousands(file.steps.len() as u64),
                thousands(crate::MAX_STEPS as u64)
            ),
        ));
    }

    // Variables: defaults, then overrides; feeder columns and capture targets become slots.
    let mut variables = Variables::default();
    let mut fixed = HashMap::new();
    for (name, value) in &file.variables.0 {
        check_var_name(name, "[variables]", name)?;
        fixed.insert(name.clone(), value.clone());
        variables.push(Variable {
            name: name.clone(),
            source: VarSource::Default,
            slot: None,
        });
    }
    for (name, value) in overrides {
        check_var_name(name, "--var", name)?;
        fixed.insert(name.clone(), value.clone());
        variables.set(name, VarSource::Override);
    }
    let mut slots: HashMap<String, usize> = HashMap::new();
    let mut initial_values = Vec::new();
    let mut add_slot = |name: &str, source: VarSource, variables: &mut Variables| -> usize {
        if let Some(s) = slots.get(name) {
            return *s;
        }
        let slot = initial_values.len();
        initial_values.push(fixed.get(name).cloned().unwrap_or_default());
        slots.insert(name.to_string(), slot);
        variables.set(name, source).slot = Some(slot);
        slot
    };

    let mut feeders = Vec::new();
    for (k, f) in file.feeders.iter().enumerate() {
        let item = format!("feeder {} ({})", k + 1, f.file);
        let order = match f.order.as_deref() {
            None | Some("sequential") => Order::Sequential,
            Some("random") => Order::Random,
            Some(other) => {
                return Err(invalid(
                    &item,
                    "order",
                    format!("`{other}` is not an order; use \"sequential\" or \"random\""),
                ))
            }
        };
        let bytes = files.read(&f.file).map_err(|m| invalid(&item, "file", m))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            invalid(
                &item,
                "file",
                format!("{} is not UTF-8 text; save the CSV as UTF-8", f.file),
            )
        })?;
        let (columns, rows) = parse_csv(&text).map_err(|m| invalid(&item, "file", m))?;
        let mut feeder_slots = Vec::new();
        for c in &columns {
            check_var_name(c, &item, "file (header row)")?;
            feeder_slots.push(add_slot(c, VarSource::Feeder, &mut variables));
        }
        feeders.push(Feeder {
            file: f.file.clone(),
            slots: feeder_slots,
            columns,
            rows,
            order,
        });
    }
    // Capture targets are slots before any template compiles: a later step may use them.
    for step in &file.steps {
        for c in &step.captures {
            check_var_name(&c.var, &step_item(&step.name), "captures.var")?;
            add_slot(&c.var, VarSource::Capture, &mut variables);
        }
    }
    let vars = Vars { fixed, slots };

    let base = match &file.base_url {
        Some(text) => {
            let t = vars.template(text, Escape::Line, "scenario", "base_url")?;
            if !t.is_constant() {
                return Err(invalid(
                    "scenario",
                    "base_url",
                    "uses a variable that a feeder or a capture sets; the base URL must be known \
                     when the run starts (use [variables] or --var)",
                ));
            }
            let text = String::from_utf8_lossy(&t.constant_bytes()).into_owned();
            let (origin, path) =
                parse_origin(&text).map_err(|m| invalid("scenario", "base_url", m))?;
            Some((origin, path.trim_end_matches('/').to_string()))
        }
        None => None,
    };

    let grpc_schema = grpc::schema(file.grpc.as_ref(), &files)?;
    let defaults = file.defaults.clone().unwrap_or_default();
    let default_think = match &defaults.think {
        Some(t) => compile_think(t, "[defaults]")?,
        None => Think::NONE,
    };

    let mut steps: Vec<Step> = Vec::new();
    // Names seen, for "unique": a set, as a recording's steps can number in the thousands.
    let mut names: HashSet<&str> = HashSet::new();
    let mut origin: Option<(Origin, String)> = None;
    for step in &file.steps {
        let item = step_item(&step.name);
        if step.name.trim().is_empty() {
            return Err(invalid(
                format!("step {}", steps.len() + 1),
                "name",
                "empty; every step needs a name, unique in the scenario",
            ));
        }
        if !names.insert(&step.name) {
            return Err(invalid(
                &item,
                "name",
                "used by an earlier step; step names must be unique",
            ));
        }
        let ctx = RequestCtx {
            vars: &vars,
            base: base.as_ref(),
            files: &files,
            defaults: &defaults.headers,
            item: &item,
        };
        let (requests, page, call, socket) = match (&step.grpc, &step.ws) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    &item,
                    "ws",
                    "given with grpc; a step is one gRPC call or one WebSocket, not both",
                ))
            }
            (Some(method), None) => {
                ws::refuse_ws_fields(step, &item)?;
                let schema = grpc_schema.as_ref();
                let (r, call) = grpc::compile_step(step, method, &ctx, schema, &mut origin)?;
                (vec![r], false, Some(call), None)
            }
            (None, Some(url)) => {
                grpc::refuse_call_fields(step, &item)?;
                let (requests, socket) = ws::compile_step(step, url, &ctx, &mut origin)?;
                (requests, true, None, Some(socket))
            }
            (None, None) => {
                grpc::refuse_call_fields(step, &item)?;
                ws::refuse_ws_fields(step, &item)?;
                let (requests, page) = compile_requests(step, &ctx, &mut origin)?;
                (requests, page, None, None)
            }
        };
        let kind = match (&call, &socket) {
            (Some(_), _) => StepKind::Grpc,
            (_, Some(_)) => StepKind::Ws,
            _ => StepKind::Http,
        };
        let weight =
            match (mode, step.weight) {
                (_, None) => 1.0,
                (Mode::Mix, Some(w)) if w.is_finite() && w > 0.0 => w,
                (Mode::Mix, Some(w)) => {
                    return Err(invalid(
                        &item,
                        "weight",
                        format!("{w} is not a weight; give a number above 0"),
                    ))
                }
                (Mode::Sequence, Some(_)) => return Err(invalid(
                    &item,
                    "weight",
                    "only counts with mode = \"mix\"; remove it, or set mode = \"mix\" at the top",
                )),
            };
        let think = match &step.think {
            Some(t) => compile_think(t, &item)?,
            None => default_think,
        };
        let captures = step
            .captures
            .iter()
            .enumerate()
            .map(|(k, c)| compile_capture(c, k, &item, &vars, kind))
            .collect::<Result<Vec<_>, _>>()?;
        let checks = step
            .checks
            .iter()
            .enumerate()
            .map(|(k, c)| compile_check(c, k, &item, kind))
            .collect::<Result<Vec<_>, _>>()?;
        steps.push(Step {
            name: step.name.clone(),
            requests,
            page,
            think,
            weight,
            captures,
            checks,
            grpc: call,
            ws: socket,
        });
    }
    if grpc_schema.is_some() && !steps.iter().any(|s| s.grpc.is_some()) {
        return Err(invalid(
            "[grpc]",
            "proto",
            "given, but no step is a gRPC call; remove [grpc], or give a step              grpc = \"package.Service/Method\"",
        ));
    }
    let (origin, _) = origin.expect("at least one step, each with a request");
    // Weights relative to the heaviest (1): their sum is then at most the number of steps,
    // where 1e308 + 1e308 overflowed to infinity and every draw fell past the first steps.
    let heaviest = steps.iter().map(|s| s.weight).fold(0.0, f64::max);
    for step in &mut steps {
        step.weight /= heaviest;
    }
    // The scenario as it can travel: the file as TOML (what it was compiled from, whether it
    // came as text or was built in memory), the overrides, the files it read.
    let text = toml::to_string(file).map_err(|e| {
        invalid(
            "scenario",
            "file",
            format!("cannot be written back as TOML ({e}); report this as a bug"),
        )
    })?;
    Ok(Scenario {
        name: file.name.clone(),
        description: file.description.clone(),
        mode,
        origin,
        variables: variables.list,
        initial_values,
        feeders,
        steps,
        grpc: grpc_schema,
        path: None,
        source: crate::ScenarioSource {
            text,
            overrides: overrides.to_vec(),
            grpc_descriptors: files.grpc_descriptors(),
            files: files.into_read(),
        },
    })
}

/// The scenario's variables in the order they were declared, and each one's place: found by
/// name once per capture and override, which a list searched each time made quadratic in a
/// recording's thousands of captures.
#[derive(Default)]
struct Variables {
    list: Vec<Variable>,
    index: HashMap<String, usize>,
}

impl Variables {
    /// A `[variables]` entry (the file's keys are unique).
    fn push(&mut self, v: Variable) {
        self.index.insert(v.name.clone(), self.list.len());
        self.list.push(v);
    }

    /// The variable `name`, found or pushed (without a slot), its value now from `source`: a
    /// later source (an override, a feeder column, a capture) takes over an earlier one's
    /// name.
    fn set(&mut self, name: &str, source: VarSource) -> &mut Variable {
        let i = match self.index.get(name) {
            Some(&i) => i,
            None => {
                self.push(Variable {
                    name: name.to_string(),
                    source,
                    slot: None,
                });
                self.list.len() - 1
            }
        };
        let v = &mut self.list[i];
        v.source = source;
        v
    }
}

fn step_item(name: &str) -> String {
    format!("step `{name}`")
}

fn check_var_name(name: &str, item: &str, field: &str) -> Result<(), ScenarioError> {
    if crate::placeholder::is_name(name) {
        Ok(())
    } else {
        Err(invalid(
            item,
            field,
            format!("`{name}` is not a variable name; use letters, digits, _ . - and $"),
        ))
    }
}

fn compile_think(t: &ThinkFile, item: &str) -> Result<Think, ScenarioError> {
    let dur = |text: &str, field: &str| parse_duration(text).map_err(|m| invalid(item, field, m));
    match (&t.fixed, &t.uniform, &t.exponential) {
        (Some(d), None, None) => Ok(Think::Fixed(dur(d, "think.fixed")?)),
        (None, Some(range), None) => {
            let [lo, hi] = range.as_slice() else {
                return Err(invalid(
                    item,
                    "think.uniform",
                    "give two durations, e.g. uniform = [\"100ms\", \"300ms\"]",
                ));
            };
            let (lo, hi) = (dur(lo, "think.uniform")?, dur(hi, "think.uniform")?);
            if lo > hi {
                return Err(invalid(
                    item,
                    "think.uniform",
                    "the first bound is above the second; write [low, high]",
                ));
            }
            Ok(Think::Uniform(lo, hi))
        }
        (None, None, Some(mean)) => Ok(Think::Exponential(dur(mean, "think.exponential")?)),
        _ => Err(invalid(
            item,
            "think",
            "give exactly one of fixed, uniform or exponential, e.g. think = { fixed = \"1s\" }",
        )),
    }
}
