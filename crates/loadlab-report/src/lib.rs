//! Renders a [`RunResult`] for people and for programs.
//!
//! Every output format implements [`Exporter`]; [`exporter_for`] picks one by name or file
//! extension and rejects unknown ones with the list of known ones. Output here is plain text
//! with no terminal colours: styling belongs to the CLI.
//!
//! # Layout
//!
//! - [`text`](TextExporter): the human summary for a terminal.
//! - [`json`](JsonExporter), [`hdrlog`](HdrLogExporter): the result for programs.
//! - `tables`: the report's content as tables, which [`markdown`] and [`html`] render.
//! - [`markdown`], [`csv`]: the same content for issues and for spreadsheets.
//! - [`html`]: one self-contained page with charts; several runs overlaid.
//!
//! It must not measure, judge or change a result (verdicts come with it), read the store,
//! or fetch anything: a page it writes works offline.

pub mod csv;
mod format;
mod hdrlog;
pub mod html;
mod json;
pub mod markdown;
mod tables;
pub mod text;

pub use csv::CsvExporter;
pub use format::{bytes, count, duration_us, rate};
pub use hdrlog::HdrLogExporter;
pub use html::HtmlExporter;
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use tables::Run;
pub use text::TextExporter;

use loadlab_result::RunResult;
use std::io::{self, Write};
use std::path::Path;

/// One output format.
pub trait Exporter {
    /// The name users pass to choose it (`text`, `json`, `html`).
    fn name(&self) -> &'static str;
    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

#[derive(Debug, thiserror::Error)]
#[error("unknown output format `{0}`: use one of text, json, hdr-log, html, markdown, csv (or a file ending in .txt, .json, .hlog, .html, .md or .csv)")]
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
        "html" | "htm" => Ok(Box::new(HtmlExporter)),
        "markdown" | "md" => Ok(Box::new(MarkdownExporter)),
        "csv" => Ok(Box::new(CsvExporter)),
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
        assert_eq!(exporter_for("html").unwrap().name(), "html");
        assert_eq!(exporter_for("out/report.HTML").unwrap().name(), "html");
        assert_eq!(exporter_for("md").unwrap().name(), "markdown");
        assert_eq!(exporter_for("markdown").unwrap().name(), "markdown");
        assert_eq!(exporter_for("report.md").unwrap().name(), "markdown");
        assert_eq!(exporter_for("runs.csv").unwrap().name(), "csv");
        assert!(err.contains("html, markdown, csv"), "{err}");
    }
}
