//! Why a scenario file was refused. Every error names where (the file, the step or feeder,
//! the field) and how to fix it; loading stops at the first one.

use std::path::PathBuf;

/// A scenario that cannot be run as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    /// Not TOML, or not the shape docs/scenario-format.md describes (toml's message names the
    /// line, the column and the key).
    #[error("{}{message}", file_prefix(.path))]
    Syntax {
        path: Option<PathBuf>,
        message: String,
    },
    /// A value that is not valid where it is: `item` is `step \`login\``, `feeder 1`,
    /// `[variables]` or `scenario`; `field` the key (`url`, `captures[0].json`...).
    #[error("{}{item}: {field}: {message}", file_prefix(.path))]
    Invalid {
        path: Option<PathBuf>,
        item: String,
        field: String,
        message: String,
    },
}

fn file_prefix(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("scenario {}: ", p.display()),
        None => "scenario: ".to_string(),
    }
}

impl ScenarioError {
    /// The item named (`step \`login\``...), when the error is about one.
    pub fn item(&self) -> Option<&str> {
        match self {
            ScenarioError::Invalid { item, .. } => Some(item),
            _ => None,
        }
    }

    /// The field named, when the error is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ScenarioError::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    pub(crate) fn with_path(mut self, file: &std::path::Path) -> ScenarioError {
        match &mut self {
            ScenarioError::Syntax { path, .. } | ScenarioError::Invalid { path, .. } => {
                *path = Some(file.to_path_buf())
            }
            ScenarioError::Read { .. } => {}
        }
        self
    }
}

/// Shorthand for an [`ScenarioError::Invalid`] without a path (added by the caller).
pub(crate) fn invalid(
    item: impl Into<String>,
    field: impl Into<String>,
    message: impl Into<String>,
) -> ScenarioError {
    ScenarioError::Invalid {
        path: None,
        item: item.into(),
        field: field.into(),
        message: message.into(),
    }
}
