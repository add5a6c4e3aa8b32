//! A streamed run's timeline kept in the results store and read back: merged past an hour
//! in its result, every interval kept by the store.

use super::{header, interval, memory_temp_path};
use loadlab_result::RunResult;

/// Issue 45 item 5: a streamed run past 3,600 intervals has its result's timeline merged, says
/// so with the way to get them back, and the store keeps every interval for `loadlab runs
/// export --intervals`; a shorter run keeps none (its result has them all).
#[test]
fn a_merged_stored_timeline_says_so_and_keeps_every_interval() {
    use crate::spill::store_sink::{this_writer, StreamedRun};
    use crate::spill::stored::{read_back, save};
    use crate::spill::timeline::MAX_TIMELINE_INTERVALS;
    use loadlab_store::{RunMeta, Store};
    let path = memory_temp_path("merged.db");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    for (written, merged) in [(MAX_TIMELINE_INTERVALS + 1, true), (10, false)] {
        let run = store
            .begin_run(&header(), &RunMeta::default(), &this_writer())
            .unwrap();
        for i in 0..written {
            store.append_interval(run, i, &interval(i)).unwrap();
        }
        let mut result = header();
        result.timeline = (0..written).map(interval).collect();
        // A watched server's windows past an hour, one per merged interval (two intervals
        // each), as the session keeps them.
        let samples: Vec<serde_json::Value> = (0..written.div_ceil(2))
            .map(|k| {
                serde_json::json!({"t_s": (2 * k + 2).min(written) as f64, "dt_s": 2.0,
                    "cpu_cores": k as f64, "rss_bytes": 7, "threads": 1, "fds": 3,
                    "generator_cpu_cores": 0.5, "processes": 1})
            })
            .collect();
        if merged {
            result.server = Some(
                serde_json::from_value(serde_json::json!({"source": "pid",
                    "description": "42", "sample_interval_s": 0.1, "samples": samples}))
                .unwrap(),
            );
        }
        let streamed = StreamedRun::of(run);
        read_back(&store, None, &streamed, &mut result);
        if merged {
            // Each merged interval has its server figures, from its window.
            let server = |k: usize| result.timeline[k].server.map(|s| s.cpu_cores);
            assert_eq!((server(0), server(7)), (Some(0.0), Some(7.0)));
        }
        let export = format!("loadlab runs export {} --intervals", run.0);
        assert_eq!(
            result.warnings.iter().any(|w| w.contains(&export)),
            merged,
            "{:?}",
            result.warnings
        );
        assert_eq!(
            result.timeline.len() as u64,
            written.div_ceil(1 + merged as u64)
        );
        save(&store, &streamed, &result, &RunMeta::default()).unwrap();
        let kept = store.interval_count(run).unwrap();
        assert_eq!(kept, if merged { written } else { 0 });
        let full: RunResult =
            serde_json::from_str(&store.export_json_with_intervals(run).unwrap()).unwrap();
        assert_eq!(full.timeline.len() as u64, written);
        assert_eq!(full.timeline[5], interval(5));
    }
    // Closed first: an open store keeps its -wal and -shm files beside it.
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
