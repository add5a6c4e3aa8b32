//! The engine's interval sink backed by a spill file: the header when the run starts, then
//! each finished interval as the collector passes it on, fsync'd at most once a
//! [`super::SYNC_EVERY`]. It keeps nothing but the open file.

use super::SpillWriter;
use loadlab_engine::collector::IntervalSink;
use loadlab_result::{IntervalSummary, RunResult};
use std::path::PathBuf;
use std::time::Instant;

pub struct SpillSink {
    path: PathBuf,
    writer: Option<SpillWriter>,
}

impl SpillSink {
    pub fn new(path: PathBuf) -> SpillSink {
        SpillSink { path, writer: None }
    }
}

impl IntervalSink for SpillSink {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        let mut header = header.clone();
        // What a recovered result should say it came from.
        header.command = std::env::args().collect();
        loadlab_store::redact(&mut header);
        let writer = SpillWriter::create(&self.path, &header, Instant::now())
            .map_err(|e| format!("{e:#}"))?;
        self.writer = Some(writer);
        Ok(())
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        match self.writer.as_mut() {
            Some(w) => w
                .append(interval, Instant::now())
                .map_err(|e| format!("{e:#}")),
            None => Err(format!(
                "the spill file {} was never opened",
                self.path.display()
            )),
        }
    }

    fn finish(&mut self) -> Result<(), String> {
        match self.writer.take() {
            Some(w) => w
                .finish(Instant::now())
                .map(drop)
                .map_err(|e| format!("{e:#}")),
            None => Ok(()),
        }
    }
}
