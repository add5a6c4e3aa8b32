//! The scenario as an importer builds it: only what `docs/scenario-format.md` describes, so
//! that [`crate::toml_out`] can write nothing the loader would refuse. Strings here are
//! templated (`{{NAME}}`); importers escape literal text with [`crate::template::escape`].
//!
//! [`check_variables`] is the last thing every importer does: a `{{NAME}}` that neither the
//! variables nor an earlier step's capture defines is an error naming the step and the field,
//! as the loader would give, but at import time, where the fix is still obvious.

use crate::template;
use crate::ImportError;

#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    /// Joined to every step url that starts with `/`.
    pub base_url: Option<String>,
    /// Defaults in the order they were found; `--var` overrides them at run time.
    pub variables: Vec<(String, String)>,
    /// Headers every step sends (a step's own header of the same name wins).
    pub default_headers: Vec<(String, String)>,
    pub steps: Vec<Step>,
}

impl Scenario {
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets a variable, keeping its first position if it was already there.
    pub fn set_variable(&mut self, name: &str, value: &str) {
        match self.variables.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value.to_string(),
            None => self.variables.push((name.to_string(), value.to_string())),
        }
    }

    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    /// Unique within the scenario.
    pub name: String,
    pub action: StepAction,
    /// Think time after the step, in milliseconds.
    pub think_ms: Option<u64>,
    pub captures: Vec<Capture>,
    /// Accepted statuses; empty: any status below 400 (the format's default).
    pub status: Vec<u16>,
}

impl Step {
    pub fn new(name: String, request: Request) -> Step {
        Step {
            name,
            action: StepAction::Request(request),
            think_ms: None,
            captures: Vec::new(),
            status: Vec::new(),
        }
    }

    /// The step's request, or its page's first.
    pub fn request(&self) -> &Request {
        match &self.action {
            StepAction::Request(r) => r,
            StepAction::Page(rs) => &rs[0],
        }
    }

    pub fn requests(&self) -> &[Request] {
        match &self.action {
            StepAction::Request(r) => std::slice::from_ref(r),
            StepAction::Page(rs) => rs,
        }
    }

    pub fn requests_mut(&mut self) -> &mut [Request] {
        match &mut self.action {
            StepAction::Request(r) => std::slice::from_mut(r),
            StepAction::Page(rs) => rs,
        }
    }
}

#[derive(Debug, Clone)]
pub enum StepAction {
    Request(Request),
    /// A page: requests fetched together; never empty.
    Page(Vec<Request>),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub method: String,
    /// Absolute, or `/path` (joined to the base url).
    pub url: String,
    /// Unique names (case-insensitively), in the order they were found.
    pub headers: Vec<(String, String)>,
    pub body: Option<Body>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Sets a header, replacing one of the same name (case-insensitively).
    pub fn set_header(&mut self, name: &str, value: &str) {
        match self
            .headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some(slot) => slot.1 = value.to_string(),
            None => self.headers.push((name.to_string(), value.to_string())),
        }
    }

    pub fn remove_header(&mut self, name: &str) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Sent as is.
    Raw(String),
    /// application/x-www-form-urlencoded, fields in order.
    Form(Vec<(String, String)>),
    /// multipart/form-data, parts in order.
    Multipart(Vec<(String, Part)>),
    /// A file's bytes, the path relative to the scenario file.
    File(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    File(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    pub var: String,
    pub source: CaptureSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CaptureSource {
    /// `$.a.b[0].c`
    Json(String),
    Header(String),
    Regex(String),
    Cookie(String),
}

/// Every templated field of a request, as (field name, text), for checks and rewriting.
pub fn templated_fields(r: &Request) -> Vec<(String, &str)> {
    let mut out = vec![("url".to_string(), r.url.as_str())];
    for (n, v) in &r.headers {
        out.push((format!("headers.{n}"), v.as_str()));
    }
    match &r.body {
        Some(Body::Raw(s)) => out.push(("body.raw".to_string(), s)),
        Some(Body::Form(fields)) => {
            for (n, v) in fields {
                out.push((format!("body.form.{n}"), v.as_str()));
            }
        }
        Some(Body::Multipart(parts)) => {
            for (n, p) in parts {
                if let Part::Text(v) = p {
                    out.push((format!("body.multipart.{n}"), v.as_str()));
                }
            }
        }
        Some(Body::File(_)) | None => {}
    }
    out
}

/// Refuses a `{{NAME}}` that no variable and no earlier capture defines, and a capture or
/// variable whose name the format cannot hold.
pub fn check_variables(s: &Scenario) -> Result<(), ImportError> {
    // A set: a recording's captures and secrets can number in the tens of thousands, and
    // every `{{NAME}}` of every step is looked up.
    let mut defined: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (name, _) in &s.variables {
        if !template::is_name(name) {
            return Err(ImportError::invalid(
                "variables",
                name,
                format!("{name:?} is not a variable name the scenario format accepts (letters, digits, `_`, `.`, `-` and `$`); rename it in the source"),
            ));
        }
        defined.insert(name);
    }
    let fix = |name: &str| {
        if name.starts_with('$') {
            format!("{{{{{name}}}}} is one of Postman's dynamic variables, which loadlab does not generate: replace it with a variable of your own and give it with --var NAME=VALUE")
        } else {
            format!("unknown variable {{{{{name}}}}}: define it in the source, or give it with --var {name}=VALUE")
        }
    };
    if let Some(base) = &s.base_url {
        for name in
            template::names(base).map_err(|e| ImportError::invalid("scenario", "base_url", e))?
        {
            if !defined.contains(name) {
                return Err(ImportError::invalid("scenario", "base_url", fix(name)));
            }
        }
    }
    for (name, value) in &s.default_headers {
        for var in template::names(value)
            .map_err(|e| ImportError::invalid("defaults", format!("headers.{name}"), e))?
        {
            if !defined.contains(var) {
                return Err(ImportError::invalid(
                    "defaults",
                    format!("headers.{name}"),
                    fix(var),
                ));
            }
        }
    }
    for step in &s.steps {
        let item = format!("step \"{}\"", step.name);
        let many = step.requests().len() > 1;
        for (i, r) in step.requests().iter().enumerate() {
            if r.url.trim().is_empty() {
                return Err(ImportError::invalid(
                    &item,
                    "url",
                    "no URL: give the request one",
                ));
            }
            for (field, text) in templated_fields(r) {
                let field = if many {
                    format!("requests[{i}].{field}")
                } else {
                    field
                };
                for name in
                    template::names(text).map_err(|e| ImportError::invalid(&item, &field, e))?
                {
                    if !defined.contains(name) {
                        return Err(ImportError::invalid(&item, &field, fix(name)));
                    }
                }
            }
        }
        for c in &step.captures {
            if !template::is_name(&c.var) {
                return Err(ImportError::invalid(
                    &item,
                    "captures.var",
                    format!("{:?} is not a variable name", c.var),
                ));
            }
            defined.insert(&c.var);
        }
    }
    Ok(())
}

/// Names made unique as they are given out: step names `name`, then `name (2)`, `name (3)`,
/// ...; variable names ([`UniqueNames::variables`]) `name`, then `name_2`, `name_3`, ...
///
/// Linear in the names given: a set answers "taken?" at once, and each name remembers the
/// next suffix to try, so the n-th repeat of a name costs one probe, not n (a list scanned
/// for each of n candidates made 4,000 HAR entries to one URL take 22 s: issue 46 item 6).
/// The remembered suffix is exact because names are only ever added: every suffix below it
/// was taken when it was passed, and still is.
#[derive(Debug, Default)]
pub struct UniqueNames {
    taken: std::collections::HashSet<String>,
    /// For a name given out at least twice, the next suffix to try.
    next: std::collections::HashMap<String, u64>,
    /// `name_2` rather than `name (2)`.
    variables: bool,
    /// Candidates tried, for the tests' bound on work.
    probes: u64,
}

impl UniqueNames {
    /// For variable names: `name`, `name_2`, `name_3`, ...
    pub fn variables() -> UniqueNames {
        UniqueNames {
            variables: true,
            ..UniqueNames::default()
        }
    }

    /// Marks `name` as in use without giving it out (a name the scenario already has).
    pub fn take(&mut self, name: &str) {
        self.taken.insert(name.to_string());
    }

    /// `name`, or `name` with the smallest suffix from 2 not yet given out; now taken.
    pub fn give(&mut self, name: &str) -> String {
        self.probes += 1;
        if self.taken.insert(name.to_string()) {
            return name.to_string();
        }
        let mut i = self.next.get(name).copied().unwrap_or(2);
        let unique = loop {
            self.probes += 1;
            let candidate = if self.variables {
                format!("{name}_{i}")
            } else {
                format!("{name} ({i})")
            };
            i += 1;
            if self.taken.insert(candidate.clone()) {
                break candidate;
            }
        };
        self.next.insert(name.to_string(), i);
        unique
    }

    /// How many candidate names were tried so far.
    pub fn probes(&self) -> u64 {
        self.probes
    }
}

/// Splits a URL into its origin (`scheme://host:port`, or a leading `{{VAR}}` holding one)
/// and the rest, which always starts with `/`. By hand, the one place: a template's text must
/// come back as written (the `url` crate would lower-case or encode `{{NAME}}`, and refuses
/// `{{PORT}}` as a port); whether a URL is one at all is `address`'s question.
pub fn split_origin(url: &str) -> Option<(&str, String)> {
    let end = if let Some(at) = url.find("://") {
        let after = at + 3;
        after
            + url[after..]
                .find(['/', '?', '#'])
                .unwrap_or(url.len() - after)
    } else if url.starts_with("{{") && !url.starts_with("{{{{") {
        url.find("}}")? + 2
    } else {
        return None;
    };
    let (origin, rest) = url.split_at(end);
    if !(rest.is_empty() || rest.starts_with(['/', '?', '#'])) {
        return None;
    }
    let rest = if rest.starts_with('/') {
        rest.to_string()
    } else {
        format!("/{rest}")
    };
    Some((origin, rest))
}

/// Makes the first request's origin the `base_url` and every request on that origin relative
/// to it, so a scenario is retargeted by changing one line. Returns the base.
pub fn hoist_base_url(s: &mut Scenario) -> Option<String> {
    let first = s.steps.first()?.request().url.clone();
    let (base, _) = split_origin(&first)?;
    let base = base.to_string();
    // A variable that holds a path as well (`https://h/api`) stays in every url: joining
    // "/x" to it would drop the path.
    let resolved = template::substitute(&base, |n| s.variable(n).map(str::to_string));
    if !crate::address::origin_only(&resolved) {
        return None;
    }
    for step in &mut s.steps {
        for r in step.requests_mut() {
            if let Some((origin, rest)) = split_origin(&r.url) {
                if origin == base {
                    r.url = rest;
                }
            }
        }
    }
    s.base_url = Some(base.clone());
    Some(base)
}

/// [`hoist_base_url`], with a literal base moved into the variable `BASE_URL`, so that
/// `--var BASE_URL=http://127.0.0.1:8080` points a recording at a test server; headers that
/// name the origin (`Origin`, `Referer`) follow it.
pub fn hoist_base_url_variable(s: &mut Scenario) {
    let Some(base) = hoist_base_url(s) else {
        return;
    };
    if base.contains("{{") {
        return;
    }
    // A BASE_URL given with --var at import time is kept: the file then points there.
    if s.variable("BASE_URL").is_none() {
        s.variables
            .insert(0, ("BASE_URL".to_string(), base.clone()));
    }
    s.base_url = Some("{{BASE_URL}}".to_string());
    let follows = |value: &mut String| {
        if value == &base || value.starts_with(&format!("{base}/")) {
            *value = format!("{{{{BASE_URL}}}}{}", &value[base.len()..]);
        }
    };
    for (_, v) in s.default_headers.iter_mut() {
        follows(v);
    }
    for step in &mut s.steps {
        for r in step.requests_mut() {
            for (_, v) in r.headers.iter_mut() {
                follows(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let table = [
            ("https://{{URL}}", Some(("https://{{URL}}", "/"))),
            ("https://{{URL}}/blogs", Some(("https://{{URL}}", "/blogs"))),
            ("http://a.b:8080?x=1", Some(("http://a.b:8080", "/?x=1"))),
            ("{{BASE}}/v1/x", Some(("{{BASE}}", "/v1/x"))),
            ("{{HOST}}.example.com/x", None),
            ("/relative", None),
        ];
        for (url, want) in table {
            let got = split_origin(url);
            assert_eq!(got.as_ref().map(|(o, r)| (*o, r.as_str())), want, "{url}");
        }
    }
}

#[cfg(test)]
mod unique_names_tests {
    use super::UniqueNames;

    #[test]
    fn names_are_given_as_before() {
        let mut names = UniqueNames::default();
        let given: Vec<String> = ["Get", "Get", "Get (3)", "Get", "Post", "Get"]
            .iter()
            .map(|n| names.give(n))
            .collect();
        // A literal "Get (3)" is taken; the next repeat of "Get" skips it.
        assert_eq!(
            given,
            ["Get", "Get (2)", "Get (3)", "Get (4)", "Post", "Get (5)"]
        );
        assert_eq!(names.give("Get (2)"), "Get (2) (2)");
    }

    #[test]
    fn variable_names_are_given_as_before() {
        let mut names = UniqueNames::variables();
        names.take("BASE_URL");
        let given: Vec<String> = ["TOKEN", "BASE_URL", "TOKEN", "TOKEN_3", "TOKEN"]
            .iter()
            .map(|n| names.give(n))
            .collect();
        assert_eq!(
            given,
            ["TOKEN", "BASE_URL_2", "TOKEN_2", "TOKEN_3", "TOKEN_4"]
        );
    }

    /// Issue 46 item 6: the n-th repeat of a name tried n candidates, each against every name
    /// given (4,000 repeats: about 10^10 comparisons). Now each name costs about one probe.
    #[test]
    fn repeats_cost_one_probe_each() {
        let mut names = UniqueNames::default();
        let n = 4_000;
        for _ in 0..n {
            names.give("GET /x");
        }
        assert_eq!(names.give("GET /x"), format!("GET /x ({})", n + 1));
        // One probe for the name itself, one for its suffix.
        assert!(names.probes() <= 2 * (n + 1), "{} probes", names.probes());
    }
}
