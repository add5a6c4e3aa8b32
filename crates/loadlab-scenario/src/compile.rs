//! From a [`ScenarioFile`] to a [`Scenario`]: every value checked, every template compiled,
//! each error naming the step (or feeder) and the field. The body forms are in `body`.

mod body;

use crate::capture::{Capture, JsonPath, Source};
use crate::check::{Check, StatusMatch};
use crate::error::{invalid, ScenarioError};
use crate::feeder::{parse_csv, Feeder, Order};
use crate::file::{
    CaptureFile, CheckFile, OrderedMap, RequestFile, ScenarioFile, StatusFile, StepFile, ThinkFile,
};
use crate::request::Request;
use crate::template::{Escape, Lookup, Template};
use crate::think::{parse_duration, Think};
use crate::{Mode, Origin, Scenario, Step, VarSource, Variable};
use std::collections::HashMap;
use std::path::Path;

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
    base_dir: &Path,
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

    // Variables: defaults, then overrides; feeder columns and capture targets become slots.
    let mut variables = Vec::new();
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
        match variables.iter_mut().find(|v| &v.name == name) {
            Some(v) => v.source = VarSource::Override,
            None => variables.push(Variable {
                name: name.clone(),
                source: VarSource::Override,
                slot: None,
            }),
        }
    }
    let mut slots: HashMap<String, usize> = HashMap::new();
    let mut initial_values = Vec::new();
    let mut add_slot = |name: &str, source: VarSource, variables: &mut Vec<Variable>| -> usize {
        if let Some(s) = slots.get(name) {
            return *s;
        }
        let slot = initial_values.len();
        initial_values.push(fixed.get(name).cloned().unwrap_or_default());
        slots.insert(name.to_string(), slot);
        match variables.iter_mut().find(|v| v.name == name) {
            Some(v) => {
                v.source = source;
                v.slot = Some(slot);
            }
            None => variables.push(Variable {
                name: name.to_string(),
                source,
                slot: Some(slot),
            }),
        }
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
        let path = base_dir.join(&f.file);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            invalid(
                &item,
                "file",
                format!(
                    "cannot read {} ({e}); the path is relative to the scenario file",
                    path.display()
                ),
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

    let defaults = file.defaults.clone().unwrap_or_default();
    let default_think = match &defaults.think {
        Some(t) => compile_think(t, "[defaults]")?,
        None => Think::NONE,
    };

    let mut steps: Vec<Step> = Vec::new();
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
        if steps.iter().any(|s| s.name == step.name) {
            return Err(invalid(
                &item,
                "name",
                "used by an earlier step; step names must be unique",
            ));
        }
        let ctx = RequestCtx {
            vars: &vars,
            base: base.as_ref(),
            base_dir,
            defaults: &defaults.headers,
            item: &item,
        };
        let (requests, page) = compile_requests(step, &ctx, &mut origin)?;
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
            .map(|(k, c)| compile_capture(c, k, &item, &vars))
            .collect::<Result<Vec<_>, _>>()?;
        let checks = step
            .checks
            .iter()
            .enumerate()
            .map(|(k, c)| compile_check(c, k, &item))
            .collect::<Result<Vec<_>, _>>()?;
        steps.push(Step {
            name: step.name.clone(),
            requests,
            page,
            think,
            weight,
            captures,
            checks,
        });
    }
    let (origin, _) = origin.expect("at least one step, each with a request");
    Ok(Scenario {
        name: file.name.clone(),
        description: file.description.clone(),
        mode,
        origin,
        variables,
        initial_values,
        feeders,
        steps,
        path: None,
    })
}

fn step_item(name: &str) -> String {
    format!("step `{name}`")
}

fn check_var_name(name: &str, item: &str, field: &str) -> Result<(), ScenarioError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '$'));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            item,
            field,
            format!("`{name}` is not a variable name; use letters, digits, _ . and -"),
        ))
    }
}

/// What every request of a step is compiled against.
struct RequestCtx<'a> {
    vars: &'a Vars,
    base: Option<&'a (Origin, String)>,
    base_dir: &'a Path,
    defaults: &'a OrderedMap<String>,
    item: &'a str,
}

fn compile_requests(
    step: &StepFile,
    ctx: &RequestCtx,
    origin: &mut Option<(Origin, String)>,
) -> Result<(Vec<Request>, bool), ScenarioError> {
    let item = ctx.item;
    match (&step.url, step.requests.is_empty()) {
        (Some(_), false) => Err(invalid(
            item,
            "requests",
            "given with url; a step is one request (url) or a page (requests), not both",
        )),
        (None, true) => Err(invalid(
            item,
            "url",
            "missing; give the request's URL (absolute, or a /path joined to base_url), or \
             `requests` for a page",
        )),
        (Some(url), true) => {
            let one = RequestFile {
                method: step.method.clone(),
                url: url.clone(),
                headers: OrderedMap::default(),
                body: step.body.clone(),
            };
            let r = compile_request(&one, &step.headers, ctx, "", origin)?;
            Ok((vec![r], false))
        }
        (None, false) => {
            for field in [
                ("method", step.method.is_some()),
                ("body", step.body.is_some()),
            ] {
                if field.1 {
                    return Err(invalid(
                        item,
                        field.0,
                        "set on a page step; give it on each of its `requests` instead",
                    ));
                }
            }
            let mut out = Vec::new();
            for (k, r) in step.requests.iter().enumerate() {
                let prefix = format!("requests[{k}].");
                out.push(compile_request(r, &step.headers, ctx, &prefix, origin)?);
            }
            Ok((out, true))
        }
    }
}

fn compile_request(
    r: &RequestFile,
    step_headers: &OrderedMap<String>,
    ctx: &RequestCtx,
    prefix: &str,
    origin: &mut Option<(Origin, String)>,
) -> Result<Request, ScenarioError> {
    let item = ctx.item;
    let field = |f: &str| format!("{prefix}{f}");
    let method = r
        .method
        .as_deref()
        .unwrap_or("GET")
        .trim()
        .to_ascii_uppercase();
    if !is_token(&method) {
        return Err(invalid(
            item,
            field("method"),
            format!("`{method}` is not an HTTP method; use e.g. GET, POST, PUT"),
        ));
    }
    let (this_origin, target) = compile_url(&r.url, ctx, &field("url"))?;
    match origin {
        None => *origin = Some((this_origin.clone(), r.url.clone())),
        Some((first, first_url)) if *first != this_origin => {
            return Err(invalid(
                item,
                field("url"),
                format!(
                    "`{}` goes to {}, but `{first_url}` goes to {}; a scenario runs against one \
                     host (put the other host's requests in a scenario of their own)",
                    r.url,
                    this_origin.url(),
                    first.url()
                ),
            ))
        }
        Some(_) => {}
    }
    // Headers: the defaults, then the step's, then the request's; a later name replaces an
    // earlier one (case-insensitively).
    let mut headers: Vec<(String, Template)> = Vec::new();
    for (map, name) in [
        (ctx.defaults, "[defaults] headers"),
        (step_headers, "headers"),
        (&r.headers, "headers"),
    ] {
        let fname = if name == "headers" {
            field("headers")
        } else {
            name.to_string()
        };
        for (k, v) in &map.0 {
            if !is_token(k) {
                return Err(invalid(
                    item,
                    &fname,
                    format!("`{k}` is not a header name (letters, digits and -)"),
                ));
            }
            if v.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(invalid(
                    item,
                    &fname,
                    format!("the value of `{k}` contains a line break or NUL; remove it"),
                ));
            }
            let t = ctx
                .vars
                .template(v, Escape::Line, item, &format!("{fname}.{k}"))?;
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            headers.push((k.clone(), t));
        }
    }
    let (body, content_type) = match &r.body {
        Some(b) => body::compile(b, ctx.vars, ctx.base_dir, item, &field("body"))?,
        None => (Template::default(), None),
    };
    Ok(Request::new(
        method,
        target,
        headers,
        body,
        content_type,
        r.url.clone(),
        this_origin.authority.clone(),
    ))
}

/// A step's URL: its origin (which must be known at load) and its target template.
fn compile_url(
    text: &str,
    ctx: &RequestCtx,
    field: &str,
) -> Result<(Origin, Template), ScenarioError> {
    let item = ctx.item;
    let t = ctx.vars.template(text.trim(), Escape::Line, item, field)?;
    if text.trim_start().starts_with('/') {
        let Some((origin, base_path)) = ctx.base else {
            return Err(invalid(
                item,
                field,
                format!("`{text}` is a path, and the scenario has no base_url; set base_url = \"http://host:port\" at the top, or write the whole URL"),
            ));
        };
        let mut target = Template::literal(base_path.as_bytes().to_vec());
        target.extend(&t);
        return Ok((origin.clone(), target));
    }
    // An absolute URL: its scheme and authority must be literal once fixed values are in.
    let (head, rest) = t.split_first_literal();
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(scheme_end) = head.find("://") else {
        return Err(invalid(
            item,
            field,
            format!(
                "`{text}` is neither an absolute URL (http://host/...) nor a /path; the host must \
                 be known when the run starts, not set by a capture or a feeder"
            ),
        ));
    };
    let after = &head[scheme_end + 3..];
    let Some(path_at) = after.find(['/', '?']) else {
        if !rest.is_constant() {
            return Err(invalid(
                item,
                field,
                format!("`{text}`: the host must be known when the run starts, not set by a capture or a feeder"),
            ));
        }
        let (origin, _) = parse_origin(&head).map_err(|m| invalid(item, field, m))?;
        return Ok((origin, Template::literal(b"/".to_vec())));
    };
    let split = scheme_end + 3 + path_at;
    let (origin, _) = parse_origin(&head[..split]).map_err(|m| invalid(item, field, m))?;
    let mut target = Template::default();
    if head[split..].starts_with('?') {
        target.push_lit(b"/");
    }
    target.push_lit(&head.as_bytes()[split..]);
    target.extend(&rest);
    Ok((origin, target))
}

/// `http://host:port/path` into its origin and its path (possibly empty).
fn parse_origin(url: &str) -> Result<(Origin, String), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` has no scheme; write it as http://{url}"))?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "`{url}`: unsupported scheme `{other}`; use http:// or https://"
            ))
        }
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err(format!(
            "`{url}` carries credentials (user:password@); send them as a header instead"
        ));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("`{url}`: an IPv6 address needs a closing ]"))?;
        (h.to_string(), tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(format!("`{url}` has no host; e.g. http://127.0.0.1:8080/"));
    }
    let default_port = if https { 443 } else { 80 };
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "`{url}`: invalid port {p:?}; a port is a number from 1 to 65535"
                ))
            }
        },
    };
    let bracketed = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    let authority = if port == default_port {
        bracketed
    } else {
        format!("{bracketed}:{port}")
    };
    Ok((
        Origin {
            https,
            host,
            port,
            authority,
        },
        path.split('#').next().unwrap_or("").to_string(),
    ))
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
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

fn compile_capture(
    c: &CaptureFile,
    k: usize,
    item: &str,
    vars: &Vars,
) -> Result<Capture, ScenarioError> {
    let field = |f: &str| format!("captures[{k}].{f}");
    let source = match (&c.json, &c.header, &c.regex, &c.cookie) {
        (Some(p), None, None, None) => {
            Source::Json(JsonPath::parse(p).map_err(|m| invalid(item, field("json"), m))?)
        }
        (None, Some(h), None, None) if is_token(h) => Source::Header(h.to_ascii_lowercase()),
        (None, Some(h), None, None) => {
            return Err(invalid(
                item,
                field("header"),
                format!("`{h}` is not a header name"),
            ))
        }
        (None, None, Some(r), None) => Source::Regex(regex::bytes::Regex::new(r).map_err(|e| {
            invalid(
                item,
                field("regex"),
                format!("not a regular expression: {e}"),
            )
        })?),
        (None, None, None, Some(name)) if !name.trim().is_empty() => {
            Source::Cookie(name.trim().to_string())
        }
        _ => {
            return Err(invalid(
                item,
                format!("captures[{k}]"),
                format!(
                    "capture {} needs exactly one of json, header, regex or cookie",
                    c.var
                ),
            ))
        }
    };
    Ok(Capture {
        var: c.var.clone(),
        slot: vars.slots[&c.var],
        source,
    })
}

fn compile_check(c: &CheckFile, k: usize, item: &str) -> Result<Check, ScenarioError> {
    let field = |f: &str| format!("checks[{k}].{f}");
    if c.equals.is_some() && c.json.is_none() {
        return Err(invalid(
            item,
            field("equals"),
            "needs json = \"$.path\" beside it: the value at that path is compared",
        ));
    }
    match (&c.status, &c.body_contains, &c.json) {
        (Some(s), None, None) => Ok(Check::Status(compile_status(s, item, &field("status"))?)),
        (None, Some(text), None) => Ok(Check::BodyContains(text.clone())),
        (None, None, Some(path)) => Ok(Check::Json {
            path: JsonPath::parse(path).map_err(|m| invalid(item, field("json"), m))?,
            equals: match &c.equals {
                Some(v) => Some(
                    serde_json::to_value(v)
                        .map_err(|e| invalid(item, field("equals"), e.to_string()))?,
                ),
                None => None,
            },
        }),
        _ => Err(invalid(
            item,
            format!("checks[{k}]"),
            "give exactly one of status, body_contains or json (with equals)",
        )),
    }
}

fn compile_status(s: &StatusFile, item: &str, field: &str) -> Result<StatusMatch, ScenarioError> {
    let code = |n: i64| -> Result<u16, ScenarioError> {
        if (100..=599).contains(&n) {
            Ok(n as u16)
        } else {
            Err(invalid(
                item,
                field,
                format!("{n} is not an HTTP status; use 100 to 599"),
            ))
        }
    };
    match s {
        StatusFile::Code(n) => Ok(StatusMatch::Exact(code(*n)?)),
        StatusFile::Codes(list) if !list.is_empty() => Ok(StatusMatch::AnyOf(
            list.iter().map(|n| code(*n)).collect::<Result<_, _>>()?,
        )),
        StatusFile::Codes(_) => Err(invalid(item, field, "an empty list; give e.g. [200, 404]")),
        StatusFile::Class(c) => {
            let b = c.as_bytes();
            if b.len() == 3 && (b'1'..=b'5').contains(&b[0]) && c[1..].eq_ignore_ascii_case("xx") {
                Ok(StatusMatch::Class(u16::from(b[0] - b'0')))
            } else {
                Err(invalid(
                    item,
                    field,
                    format!("`{c}` is not a status class; write e.g. \"2xx\", or a code"),
                ))
            }
        }
    }
}
