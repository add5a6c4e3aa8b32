//! Renders a [`RunResult`] for people and for programs.
//!
//! Every output format implements [`Exporter`]; [`exporter_for`] picks one by name or file
//! extension and rejects unknown ones with the list of known ones. Output here is plain text
//! with no terminal colours: styling belongs to the CLI.

mod format;
mod hdrlog;
mod json;
mod text;

pub use format::{bytes, count, duration_us};
pub use hdrlog::HdrLogExporter;
pub use json::JsonExporter;
pub use text::TextExporter;

use loadlab_result::RunResult;
use std::io::{self, Write};
use std::path::Path;

/// One output format.
pub trait Exporter {
    /// The name users pass to choose it (`text`, `json`).
    fn name(&self) -> &'static str;
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

#[derive(Debug, thiserror::Error)]
#[error("unknown output format `{0}`: use one of text, json, hdr-log (or a file ending in .txt, .json or .hlog)")]
pub struct UnknownFormat(pub String);

/// Finds the exporter for a format name (`json`) or, failing that, a path's extension.
pub fn exporter_for(name_or_path: &str) -> Result<Box<dyn Exporter>, UnknownFormat> {
    let key = Path::new(name_or_path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or(name_or_path)
        .to_ascii_lowercase();
    match key.as_str() {
        "json" => Ok(Box::new(JsonExporter)),
        "text" | "txt" => Ok(Box::new(TextExporter)),
        "hdr-log" | "hlog" => Ok(Box::new(HdrLogExporter)),
        _ => Err(UnknownFormat(name_or_path.to_string())),
    }
}

/// Renders with one exporter into a string (tests, previews).
pub fn render(exporter: &dyn Exporter, result: &RunResult) -> String {
    let mut out = Vec::new();
    exporter
        .export(result, &mut out)
        .expect("writing to memory cannot fail");
    String::from_utf8(out).expect("exporters write UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporters_by_name_and_extension() {
        assert_eq!(exporter_for("json").unwrap().name(), "json");
        assert_eq!(exporter_for("out/result.JSON").unwrap().name(), "json");
        assert_eq!(exporter_for("summary.txt").unwrap().name(), "text");
        let err = exporter_for("result.xml").err().unwrap().to_string();
        assert!(err.contains("text, json"), "{err}");
        assert_eq!(exporter_for("run.hlog").unwrap().name(), "hdr-log");
    }
}
