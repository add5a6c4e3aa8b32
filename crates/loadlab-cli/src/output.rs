//! Where results go: the human summary on the terminal, JSON to a file or standard output.

use anyhow::Context as _;
use loadlab_engine::RunResult;
use loadlab_report::{Exporter, JsonExporter, TextExporter};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

pub enum Destination {
    Stdout,
    File(PathBuf, File),
}

impl Destination {
    /// Opens (creates) the output now, so that a bad path fails before the run.
    pub fn open(raw: &str) -> anyhow::Result<Destination> {
        if raw == "-" {
            return Ok(Destination::Stdout);
        }
        let path = PathBuf::from(raw);
        let file = File::create(&path).with_context(|| {
            format!(
                "--json: cannot create {}; check that its directory exists and is writable",
                path.display()
            )
        })?;
        Ok(Destination::File(path, file))
    }
}

pub fn write_json(dest: Destination, result: &RunResult) -> anyhow::Result<()> {
    match dest {
        Destination::Stdout => {
            let mut out = io::stdout().lock();
            JsonExporter.export(result, &mut out)?;
            out.flush()?;
        }
        Destination::File(path, file) => {
            let mut out = BufWriter::new(file);
            JsonExporter
                .export(result, &mut out)
                .and_then(|_| out.flush())
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

/// The summary goes to standard output, or to standard error when standard output carries JSON.
pub fn print_summary(result: &RunResult, stdout_taken: bool) -> anyhow::Result<()> {
    let written = if stdout_taken {
        TextExporter.export(result, &mut io::stderr().lock())
    } else {
        TextExporter.export(result, &mut io::stdout().lock())
    };
    match written {
        // A closed pipe (`loadlab run ... | head`) is the reader's choice, not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
