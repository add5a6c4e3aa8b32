//! Where results go: the human summary on the terminal, JSON to a file or standard output.

use anyhow::Context as _;
use loadlab_engine::RunResult;
use loadlab_report::{Exporter, TextExporter};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

pub enum Destination {
    Stdout,
    File(&'static str, PathBuf, File),
}

/// The machine-readable outputs a run writes.
#[derive(Default)]
pub struct Outputs {
    pub json: Option<Destination>,
    pub hdr_log: Option<Destination>,
}

impl Destination {
    /// Opens (creates) the output now, so that a bad path fails before the run.
    pub fn open(raw: &str, flag: &'static str) -> anyhow::Result<Destination> {
        if raw == "-" {
            return Ok(Destination::Stdout);
        }
        let path = PathBuf::from(raw);
        let file = File::create(&path).with_context(|| {
            format!(
                "{flag}: cannot create {}; check that its directory exists and is writable",
                path.display()
            )
        })?;
        Ok(Destination::File(flag, path, file))
    }
}

pub fn write(dest: Destination, exporter: &dyn Exporter, result: &RunResult) -> anyhow::Result<()> {
    match dest {
        Destination::Stdout => {
            let mut out = io::stdout().lock();
            exporter.export(result, &mut out)?;
            out.flush()?;
        }
        Destination::File(flag, path, file) => {
            let mut out = BufWriter::new(file);
            exporter
                .export(result, &mut out)
                .and_then(|_| out.flush())
                .with_context(|| format!("{flag}: cannot write {}", path.display()))?;
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
