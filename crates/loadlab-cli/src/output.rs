//! Where results go: the human summary on the terminal, files for programs. A result file is
//! never truncated before its replacement is whole: it is written to a temporary file beside
//! it and renamed into place, so a crash, SIGTERM or an error leaves the earlier file intact.
//! Paths are checked before a run starts (without touching an existing file), so a bad path
//! fails in a second, not after a long run.

use anyhow::Context as _;
use loadlab_report::{Exporter, TextExporter};
use loadlab_result::RunResult;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub enum Destination {
    Stdout,
    File(&'static str, PathBuf),
}

/// The machine-readable outputs a run writes.
#[derive(Default)]
pub struct Outputs {
    pub json: Option<Destination>,
    pub hdr_log: Option<Destination>,
    pub report: Option<Destination>,
}

impl Destination {
    /// Checks that the output can be written, so that a bad path fails before the run.
    pub fn open(raw: &str, flag: &'static str) -> anyhow::Result<Destination> {
        if raw == "-" {
            return Ok(Destination::Stdout);
        }
        let path = PathBuf::from(raw);
        check_writable(&path, flag)?;
        Ok(Destination::File(flag, path))
    }
}

/// Fails, naming the flag and the fix, when `path` cannot be written: its directory must
/// exist and take a new file, and the path must not be a directory. An existing file is left
/// as it is.
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    if path.is_dir() {
        anyhow::bail!(
            "{flag}: {} is a directory; give a file name",
            path.display()
        );
    }
    let probe = temp_beside(path);
    File::create(&probe).with_context(|| {
        format!(
            "{flag}: cannot create {}; check that its directory exists and is writable",
            path.display()
        )
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path);
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    match written.and_then(|_| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

pub fn write(
    dest: &Destination,
    exporter: &dyn Exporter,
    result: &RunResult,
) -> anyhow::Result<()> {
    match dest {
        Destination::Stdout => {
            let mut out = io::stdout().lock();
            exporter.export(result, &mut out)?;
            out.flush()?;
        }
        Destination::File(flag, path) => {
            let mut bytes = Vec::new();
            exporter.export(result, &mut bytes)?;
            write_atomically(path, &bytes)
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
