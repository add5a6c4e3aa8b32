//! Helpers shared by the CLI's test files (not every file uses every one).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The `loadlab` binary this package built.
pub fn loadlab() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

/// The machine to one test of the binary, for the tests that measure it (CPU, rates,
/// latency, links) or build network namespaces: taken first, held for the test. Each test
/// binary has its own lock.
pub fn serial() -> std::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// The machine shared with the other tests that take it so, and with no test that measures
/// ([`serial`]): for the tests that only count (exact requests, verdicts far beyond any
/// noise, processes started and stopped), whose waits (a fleet's agents, ansible, fixed-rate
/// runs) left a core idle when they ran one at a time.
pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

static MACHINE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Fails with every violation when `value` does not follow `schema/run-result.schema.json`.
pub fn assert_valid(value: &serde_json::Value) {
    let text = include_str!("../../../../schema/run-result.schema.json");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema is valid");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:#?}"
    );
}

/// The cgroups a loadlab process (`pid`) made for the servers it launched (`loadlab-PID-N`),
/// in every hierarchy, a few levels down (v1 memory groups sit below the caller's own).
pub fn groups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if !path.is_dir() {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(path);
            } else if depth > 0 {
                walk(&path, prefix, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        Path::new("/sys/fs/cgroup"),
        &format!("loadlab-{pid}-"),
        4,
        &mut out,
    );
    out
}

/// loadlab's mock upstream answering on `listener` (bound where the test needs it: loopback,
/// or inside a namespace), on a thread and runtime of its own; stopped when dropped. Its
/// counters are the server's own count.
pub struct Upstream {
    pub addr: std::net::SocketAddr,
    pub counters: loadlab_upstream::Counters,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    pub fn serve(listener: std::net::TcpListener) -> Upstream {
        let addr = listener.local_addr().unwrap();
        let counters = loadlab_upstream::Counters::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = {
            let counters = counters.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    listener.set_nonblocking(true).unwrap();
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    let config = loadlab_upstream::UpstreamConfig {
                        addr,
                        delay: std::time::Duration::ZERO,
                        tls: None,
                    };
                    loadlab_upstream::run(listener, config, counters, async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
                });
            })
        };
        Upstream {
            addr,
            counters,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        let _ = self.thread.take().map(|t| t.join());
    }
}

/// A process the test started, killed (by its PID) and reaped when dropped: also when the
/// test fails before its end, so that no server outlives it.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
