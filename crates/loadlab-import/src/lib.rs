//! Importers: a Postman collection, a HAR recording or a curl command in; the text of a
//! scenario file (`docs/scenario-format.md`) and a report of what could not be carried over
//! out. Pure: the caller reads the input and writes the output; nothing here touches the
//! network, runs a script or writes a file.
//!
//! Layout:
//! - [`scenario`]: the scenario as an importer builds it ([`Scenario`], [`Step`],
//!   [`Request`], ...) and [`scenario::check_variables`], which refuses a `{{NAME}}` that
//!   nothing defines (naming the step and the field) before any text is written.
//! - [`template`]: `{{NAME}}` in strings: the names used, literal text escaped.
//! - [`toml_out`]: the scenario as TOML a person edits: the source and the report as
//!   comments at the top, steps in order, one table per thing.
//! - [`postman`]: collections v2.0 and v2.1 (folders, variables, auth, bodies, scripts).
//! - [`har`]: browser recordings (filtering, think times, correlation, secrets, pages).
//! - [`curl`]: one command as a browser's developer tools copy it.
//!
//! Each importer returns an [`Imported`]: the TOML text, the notes, and the scenario itself
//! (for tests and for callers that want to look before writing).

pub mod address;
pub mod curl;
pub mod har;
pub mod postman;
pub mod scenario;
pub mod template;
pub mod toml_out;

pub use scenario::{Body, Capture, CaptureSource, Part, Request, Scenario, Step, StepAction};

/// What an import produced.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The scenario file's text, ready to write.
    pub toml: String,
    /// What was not carried over (or was changed on the way), in step order.
    pub notes: Vec<Note>,
    /// The scenario the text was written from.
    pub scenario: Scenario,
}

/// One thing the import could not carry over, or carried over differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The step it concerns; `None` for the scenario as a whole.
    pub step: Option<String>,
    pub text: String,
}

impl Note {
    pub fn scenario(text: impl Into<String>) -> Note {
        Note {
            step: None,
            text: text.into(),
        }
    }
    pub fn step(step: &str, text: impl Into<String>) -> Note {
        Note {
            step: Some(step.to_string()),
            text: text.into(),
        }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.step {
            Some(step) => write!(f, "step \"{step}\": {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

/// Input an importer cannot turn into a scenario. Every variant names where the problem is.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    // The parser's message is part of this one (not a `source`), so it is printed once.
    #[error("{what} is not JSON: {error} (export it again, or check that this is the right file)")]
    NotJson {
        what: String,
        error: serde_json::Error,
    },
    /// `item` is a step, a request or the document; `field` is where in it.
    #[error("{item}: {field}: {problem}")]
    Invalid {
        item: String,
        field: String,
        problem: String,
    },
    /// A bad option given to the importer (a `--var` without `=`, ...).
    #[error("{0}")]
    Usage(String),
}

impl ImportError {
    pub(crate) fn invalid(
        item: impl Into<String>,
        field: impl Into<String>,
        problem: impl Into<String>,
    ) -> ImportError {
        ImportError::Invalid {
            item: item.into(),
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Parses `NAME=VALUE` (a `--var`): the name must be a variable name the format accepts.
pub fn parse_var(text: &str) -> Result<(String, String), ImportError> {
    let (name, value) = text.split_once('=').ok_or_else(|| {
        ImportError::Usage(format!(
            "--var {text}: expected NAME=VALUE, e.g. --var URL=127.0.0.1:8080"
        ))
    })?;
    let name = name.trim();
    if !template::is_name(name) {
        return Err(ImportError::Usage(format!(
            "--var {text}: {name:?} is not a variable name (letters, digits, `_`, `.`, `-` and `$`)"
        )));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Where an import came from, for the comment at the top of the file.
#[derive(Debug, Clone)]
pub struct Source {
    /// "postman", "har" or "curl".
    pub kind: &'static str,
    /// The file name, or the command (shortened) for curl.
    pub label: String,
}

pub(crate) fn finish(
    scenario: Scenario,
    mut notes: Vec<Note>,
    source: &Source,
) -> Result<Imported, ImportError> {
    scenario::check_variables(&scenario)?;
    // The scenario-wide notes first, then the steps' in step order: the report reads like
    // the file. Each step's place looked up once, not searched for per note (a note per
    // step made this quadratic in the steps).
    let place: std::collections::HashMap<&str, usize> = scenario
        .steps
        .iter()
        .enumerate()
        .rev()
        .map(|(i, st)| (st.name.as_str(), i))
        .collect();
    let order = |n: &Note| match &n.step {
        Some(s) => 1 + place.get(s.as_str()).copied().unwrap_or(0),
        None => 0,
    };
    notes.sort_by_key(order);
    let toml = toml_out::write(&scenario, &notes, source);
    Ok(Imported {
        toml,
        notes,
        scenario,
    })
}
