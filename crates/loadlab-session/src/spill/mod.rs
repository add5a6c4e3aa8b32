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

/// Reads a spill file's header, then its intervals one at a time.
///
/// A kill can only cut the last record short: the writer appends each record, its newline
/// last, in one write. So a last line without its newline is a torn tail, left out and
/// counted in [`SpillReader::torn_bytes`], never an error. A whole line (newline and all)
/// that fails its check (its length prefix, or JSON that is no interval) is something else:
/// the file was damaged or altered. Such a record is skipped and named in
/// [`SpillReader::damage`], and the intact records after it are read on: each record is a
/// line of its own, so one damaged record does not take the others with it.
pub struct SpillReader<R> {
    input: R,
    line: Vec<u8>,
    pub torn_bytes: usize,
    /// The records that failed their check with their newline whole (not a torn tail).
    pub damage: Damage,
    /// The number of the next record (the header is record 0, the first interval 1).
    record: u64,
    pub path: PathBuf,
}

/// Records of a spill file that failed their check although whole: what the reader
/// skipped, to be reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Damage {
    /// How many records were skipped.
    pub records: u64,
    /// The first ones skipped (record numbers, the first interval being 1), at most
    /// [`Damage::NAMED`].
    pub first: Vec<u64>,
    /// Intact intervals read after the first damaged record.
    pub intervals_after: u64,
}

impl Damage {
    /// How many damaged records are named by number; the rest are counted.
    pub const NAMED: usize = 10;

    fn note(&mut self, record: u64) {
        self.records += 1;
        if self.first.len() < Damage::NAMED {
            self.first.push(record);
        }
    }

    /// A sentence for the result's warnings, or `None` when nothing was damaged.
    pub fn describe(&self, source: &str) -> Option<String> {
        if self.records == 0 {
            return None;
        }
        let named: Vec<String> = self.first.iter().map(u64::to_string).collect();
        let more = if self.records > self.first.len() as u64 {
            format!(" and {} more", self.records - self.first.len() as u64)
        } else {
            String::new()
        };
        Some(format!(
            "DAMAGED: {source} has {} damaged record{} (interval record{} {}{more}, counting \
             the first interval as 1): whole lines that fail their length or JSON check, \
             which no kill leaves (a kill cuts only the last record short). They were \
             skipped, so the figures lack their intervals; the {} intact interval{} after \
             the first damaged one were recovered. The file was altered or its disk damaged \
             it: recover from an unaltered copy if there is one",
            self.records,
            if self.records == 1 { "" } else { "s" },
            if self.first.len() == 1 { "" } else { "s" },
            named.join(", "),
            self.intervals_after,
            if self.intervals_after == 1 { "" } else { "s" },
        ))
    }
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
            damage: Damage::default(),
            record: 0,
            path: path.to_path_buf(),
        })
    }

    /// The header: the first record, which [`SpillWriter::create`] made durable.
    pub fn header(&mut self) -> anyhow::Result<RunResult> {
        let parsed = match self.next_line()? {
            Line::Whole => json_of(&self.line).and_then(|j| serde_json::from_slice(j).ok()),
            Line::Torn | Line::End => None,
        };
        parsed.ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no readable header (the run was killed before it started?): there is \
                 nothing to recover",
                self.path.display()
            )
        })
    }

    /// The next whole interval, `None` at the end or at a torn tail; damaged records on the
    /// way are skipped and noted in [`SpillReader::damage`].
    pub fn next_interval(&mut self) -> anyhow::Result<Option<IntervalSummary>> {
        loop {
            let record = self.record;
            match self.next_line()? {
                Line::End => return Ok(None),
                Line::Torn => {
                    self.torn_bytes = self.line.len();
                    return Ok(None);
                }
                Line::Whole => {}
            }
            let parsed = json_of(&self.line).and_then(|j| serde_json::from_slice(j).ok());
            match parsed {
                Some(interval) => {
                    if self.damage.records > 0 {
                        self.damage.intervals_after += 1;
                    }
                    return Ok(Some(interval));
                }
                None => self.damage.note(record),
            }
        }
    }

    /// Reads the next line into `self.line`: whole (its newline read), the file's torn last
    /// line (no newline before the end), or the end. A line longer than any record is read
    /// through to its newline and kept only in part, which fails its check.
    fn next_line(&mut self) -> anyhow::Result<Line> {
        self.line.clear();
        let cap = MAX_RECORD_BYTES as u64 + 32;
        let read = |input: &mut R, into: &mut Vec<u8>, cap: u64| {
            input
                .take(cap)
                .read_until(b'\n', into)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.path.display()))
        };
        let n = read(&mut self.input, &mut self.line, cap)?;
        if n == 0 {
            return Ok(Line::End);
        }
        self.record += 1;
        if self.line.ends_with(b"\n") {
            return Ok(Line::Whole);
        }
        if (n as u64) < cap {
            return Ok(Line::Torn);
        }
        // Over-long: skip to its newline, a bounded piece at a time.
        let mut rest = Vec::new();
        loop {
            rest.clear();
            let m = read(&mut self.input, &mut rest, cap)?;
            if m == 0 {
                return Ok(Line::Torn);
            }
            if rest.ends_with(b"\n") {
                // Whole, and too long: its check fails on the part kept.
                return Ok(Line::Whole);
            }
        }
    }
}

/// What [`SpillReader::next_line`] found.
enum Line {
    Whole,
    Torn,
    End,
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
