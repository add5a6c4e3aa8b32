//! A run's timeline written as it is made, to a spill file (below) or to the results store
//! ([`store_sink`], [`stored`]); [`recover`] rebuilds a killed run's result from either.
//!
//! The spill file: a run's timeline written as it is made, so that memory stays flat over a
//! day-long soak and a run killed by any means (SIGKILL, the OOM killer, a reboot) leaves
//! every interval written before it died.
//!
//! # Format
//!
//! A first line `loadlab-spill 1`, then one record per line, each `LEN JSON\n` where `LEN`
//! is the byte length of `JSON` in decimal. The first record is the run's header (a
//! [`RunResult`] as known at the start: target, load, environment; timeline empty), every
//! later one a finished [`IntervalSummary`] with its encoded histogram, in order. Why this and not SQLite: it
//! appends with one `write` per interval, needs no library, and its only failure mode under
//! a kill is a torn last record, which the length prefix makes certain to detect (a JSON
//! line cut at a `}` could still parse). Why JSON: the interval is already the result
//! document's type; a reader needs nothing but the schema.
//!
//! Durability: the writer calls `fsync` at most once a second (the clock is passed in, so
//! tests decide when a second has passed), and once more when it is finished: a kill loses
//! at most the last second's intervals, and a long run does not pay an fsync per interval.
//!
//! This module must not keep intervals in memory: readers stream, one record at a time.

pub mod orphans;
pub mod recover;
pub mod server_samples;
pub mod sink;
pub mod store_sink;
pub mod stored;
pub mod timeline;

use loadlab_result::{IntervalSummary, RunResult};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The first line of every spill file.
pub const MAGIC: &str = "loadlab-spill 1";

/// The longest record a reader accepts: a bound against a corrupt length prefix.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// How often the writer makes what it wrote durable, at most.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// Appends records to a spill file and makes them durable at most once a [`SYNC_EVERY`].
pub struct SpillWriter {
    path: PathBuf,
    file: File,
    last_sync: Option<Instant>,
    /// How many times the writer called fsync (for tests of the throttle).
    pub syncs: u64,
    pub intervals: u64,
}

impl SpillWriter {
    /// Creates (or truncates) `path` and writes the magic line and the header, durably.
    pub fn create(path: &Path, header: &RunResult, now: Instant) -> anyhow::Result<SpillWriter> {
        let file = File::create(path).map_err(|e| {
            anyhow::anyhow!(
                "cannot create the spill file {}: {e}; choose a writable directory for it",
                path.display()
            )
        })?;
        let mut w = SpillWriter {
            path: path.to_path_buf(),
            file,
            last_sync: None,
            syncs: 0,
            intervals: 0,
        };
        let mut header = header.clone();
        header.timeline.clear();
        w.write_raw(format!("{MAGIC}\n").as_bytes())?;
        w.write_record(&serde_json::to_string(&header)?)?;
        w.sync(now)?;
        Ok(w)
    }

    /// Appends one finished interval; syncs if the last sync is [`SYNC_EVERY`] old.
    pub fn append(&mut self, interval: &IntervalSummary, now: Instant) -> anyhow::Result<()> {
        self.write_record(&serde_json::to_string(interval)?)?;
        self.intervals += 1;
        if self
            .last_sync
            .is_none_or(|at| now.saturating_duration_since(at) >= SYNC_EVERY)
        {
            self.sync(now)?;
        }
        Ok(())
    }

    /// Makes everything written durable; call when the run ends.
    pub fn finish(mut self, now: Instant) -> anyhow::Result<PathBuf> {
        self.sync(now)?;
        Ok(self.path)
    }

    fn write_record(&mut self, json: &str) -> anyhow::Result<()> {
        // One write per record: a kill leaves whole records and at most one torn tail.
        let line = format!("{} {json}\n", json.len());
        self.write_raw(line.as_bytes())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.file.write_all(bytes).map_err(|e| {
            anyhow::anyhow!(
                "cannot append to the spill file {}: {e}; free space on its disk or choose \
                 another place for it",
                self.path.display()
            )
        })
    }

    fn sync(&mut self, now: Instant) -> anyhow::Result<()> {
        self.file.sync_data().map_err(|e| {
            anyhow::anyhow!("cannot sync the spill file {}: {e}", self.path.display())
        })?;
        self.syncs += 1;
        self.last_sync = Some(now);
        Ok(())
    }
}

/// Reads a spill file's header, then its intervals one at a time; a torn last record (a kill in the middle of a
/// write) ends the stream and is counted in [`SpillReader::torn_bytes`], never an error.
pub struct SpillReader<R> {
    input: R,
    line: Vec<u8>,
    pub torn_bytes: usize,
    pub path: PathBuf,
}

impl SpillReader<BufReader<File>> {
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let file = File::open(path).map_err(|e| {
            anyhow::anyhow!(
                "cannot open {}: {e}; give the spill file a killed run left (next to its \
                 --json file, or the path its start-up line named)",
                path.display()
            )
        })?;
        SpillReader::new(BufReader::new(file), path)
    }
}

impl<R: BufRead> SpillReader<R> {
    /// Checks the magic line.
    pub fn new(mut input: R, path: &Path) -> anyhow::Result<Self> {
        let mut first = Vec::new();
        input
            .by_ref()
            .take(64)
            .read_until(b'\n', &mut first)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        if first.strip_suffix(b"\n") != Some(MAGIC.as_bytes()) {
            anyhow::bail!(
                "{} is not a loadlab spill file (it does not start with `{MAGIC}`); give the \
                 spill file a run wrote (a result file from --json needs no recovery)",
                path.display()
            );
        }
        Ok(SpillReader {
            input,
            line: Vec::new(),
            torn_bytes: 0,
            path: path.to_path_buf(),
        })
    }

    /// The header: the first record, which [`SpillWriter::create`] made durable.
    pub fn header(&mut self) -> anyhow::Result<RunResult> {
        let parsed = match self.next_json()? {
            Some(json) => serde_json::from_slice(json).ok(),
            None => None,
        };
        parsed.ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no readable header (the run was killed before it started?): there is \
                 nothing to recover",
                self.path.display()
            )
        })
    }

    /// The next whole interval, `None` at the end or at a torn tail.
    pub fn next_interval(&mut self) -> anyhow::Result<Option<IntervalSummary>> {
        let Some(json) = self.next_json()? else {
            return Ok(None);
        };
        match serde_json::from_slice(json) {
            Ok(interval) => Ok(Some(interval)),
            Err(_) => {
                self.discard_rest();
                Ok(None)
            }
        }
    }

    /// The next record's JSON when it is whole (`LEN JSON\n`, `LEN` its length).
    fn next_json(&mut self) -> anyhow::Result<Option<&[u8]>> {
        self.line.clear();
        let n = (&mut self.input)
            .take(MAX_RECORD_BYTES as u64 + 32)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.path.display()))?;
        if n == 0 {
            return Ok(None);
        }
        if json_of(&self.line).is_none() {
            self.discard_rest();
            return Ok(None);
        }
        Ok(json_of(&self.line))
    }

    /// A torn record ends the file: whatever follows it is not trusted either.
    fn discard_rest(&mut self) {
        let mut rest = Vec::new();
        let _ = self.input.read_to_end(&mut rest);
        self.torn_bytes = self.line.len() + rest.len();
    }
}

/// The JSON of `LEN JSON\n` when `LEN` is its length, else `None` (a torn record).
fn json_of(line: &[u8]) -> Option<&[u8]> {
    let body = line.strip_suffix(b"\n")?;
    let space = body.iter().position(|b| *b == b' ')?;
    let len: usize = std::str::from_utf8(&body[..space]).ok()?.parse().ok()?;
    let json = &body[space + 1..];
    (json.len() == len && len <= MAX_RECORD_BYTES).then_some(json)
}

#[cfg(test)]
mod tests;
