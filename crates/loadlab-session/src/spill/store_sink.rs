//! The engine's interval sink backed by the results store (`--save`, experiments): the run's
//! row is made when the run starts (its header, marked interrupted, and this process as its
//! writer), then each finished interval is appended in a transaction of its own (WAL: a
//! commit is durable, a kill loses at most the interval being written). The sink opens its
//! own connection, on the collector's thread; the caller learns the run's id through the
//! [`StreamedRun`] handle. It keeps nothing but the connection.

use loadlab_engine::collector::IntervalSink;
use loadlab_result::{IntervalSummary, RunResult};
use loadlab_store::{RunId, RunMeta, Store, Writer};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct StoreSink {
    db: PathBuf,
    meta: RunMeta,
    handle: StreamedRun,
    store: Option<Store>,
    run: Option<RunId>,
    seq: u64,
}

/// What the caller keeps of a run streamed to the store: its id, once its row is made.
#[derive(Clone, Default)]
pub struct StreamedRun(Arc<Mutex<Option<RunId>>>);

impl StreamedRun {
    pub fn run(&self) -> Option<RunId> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handle of a run already streamed (tests that write the store themselves).
    #[cfg(test)]
    pub(crate) fn of(run: RunId) -> StreamedRun {
        StreamedRun(Arc::new(Mutex::new(Some(run))))
    }
}

impl StoreSink {
    /// A sink writing to the store at `db`, the run described by `meta`.
    pub fn new(db: &Path, meta: RunMeta) -> (StoreSink, StreamedRun) {
        let handle = StreamedRun::default();
        let sink = StoreSink {
            db: db.to_path_buf(),
            meta,
            handle: handle.clone(),
            store: None,
            run: None,
            seq: 0,
        };
        (sink, handle)
    }
}

/// This process, as the writer of a streamed run.
pub fn this_writer() -> Writer {
    Writer {
        pid: std::process::id(),
        boot_id: boot_id(),
    }
}

pub(crate) fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

impl IntervalSink for StoreSink {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        let mut header = header.clone();
        // What a recovered result should say it came from.
        header.command = std::env::args().collect();
        let store = Store::open(&self.db).map_err(|e| e.to_string())?;
        let run = store
            .begin_run(&header, &self.meta, &this_writer())
            .map_err(|e| e.to_string())?;
        *self.handle.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(run);
        self.run = Some(run);
        self.store = Some(store);
        Ok(())
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        let (Some(store), Some(run)) = (self.store.as_ref(), self.run) else {
            return Err(format!(
                "the run's row in {} was never made",
                self.db.display()
            ));
        };
        store
            .append_interval(run, self.seq, interval)
            .map_err(|e| e.to_string())?;
        self.seq += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        self.store = None; // every interval is committed already
        Ok(())
    }
}
