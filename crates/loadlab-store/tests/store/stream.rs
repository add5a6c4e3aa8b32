//! Runs written as they go (migration 3): the row made at the start, intervals appended one
//! transaction each, the result laid over the header at the end (same id), a killed run's
//! rebuilt result sealed over it; and a schema-2 file (made by the previous schema's own SQL,
//! with a run in it) opening under schema 3 with its run intact.

use crate::support::{fixture, temp_store};
use loadlab_result::IntervalSummary;
use loadlab_store::schema::{latest_version, MIGRATIONS};
use loadlab_store::{Filter, RunMeta, Store, Writer};

fn interval(i: u64) -> IntervalSummary {
    serde_json::from_value(serde_json::json!({
        "start_s": i as f64, "duration_s": 1.0, "warmup": false, "offered_per_s": null,
        "connections": 2.0, "achieved_per_s": 10.0, "completed": 10 + i, "failed": 0,
        "p50_us": null, "p90_us": null, "p99_us": null, "max_us": null, "bytes_sent": 100,
        "bytes_received": 200, "steal": null,
        "server": {"cpu_cores": 0.5, "rss_bytes": 1000 + i, "generator_cpu_cores": 0.1},
    }))
    .unwrap()
}

fn writer() -> Writer {
    Writer {
        pid: 4_000_000,
        boot_id: Some("test-boot".into()),
    }
}

#[test]
fn a_streamed_run_is_a_header_then_intervals_then_its_result_under_one_id() {
    let (_dir, _path, store) = temp_store();
    let result = fixture("ok");
    let meta = RunMeta {
        tag: Some("soak".into()),
        ..RunMeta::default()
    };
    let id = store.begin_run(&result, &meta, &writer()).unwrap();
    let row = &store.list_runs(&Filter::default()).unwrap()[0];
    assert_eq!((row.id, row.interrupted), (id, true));
    for i in 0..3 {
        store.append_interval(id, i, &interval(i)).unwrap();
    }
    let open = store.open_streams().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!((open[0].run, open[0].intervals), (id, 3));
    assert_eq!(open[0].last_end_s, Some(3.0));
    assert_eq!(open[0].writer, writer());
    let mut seen = Vec::new();
    store
        .for_each_interval(id, |iv| {
            seen.push(iv);
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, (0..3).map(interval).collect::<Vec<_>>());
    assert_eq!(
        seen[2].server.unwrap().rss_bytes,
        1002,
        "server samples kept"
    );

    store.finish_run(id, &result, &meta).unwrap();
    let stored = store.run(id).unwrap();
    assert!(!stored.row.interrupted);
    assert_eq!(stored.row.tag.as_deref(), Some("soak"));
    assert_eq!(
        stored.row.summary.requests_completed,
        result.measured.requests.completed
    );
    assert!(store.open_streams().unwrap().is_empty());
    assert_eq!(store.interval_count(id).unwrap(), 0);
    store.check_integrity().unwrap();
}

#[test]
fn a_killed_run_is_sealed_with_its_rebuilt_result_and_keeps_its_intervals() {
    let (_dir, path, store) = temp_store();
    let header = fixture("ok");
    let id = store
        .begin_run(&header, &RunMeta::default(), &writer())
        .unwrap();
    store.append_interval(id, 0, &interval(0)).unwrap();
    drop(store); // the writer is killed: nothing more arrives
    let store = Store::open(&path).unwrap();
    assert_eq!(store.open_streams().unwrap().len(), 1);
    let mut rebuilt = header.clone();
    rebuilt.interrupted = true;
    rebuilt.measured.requests.completed = 10;
    store.seal_run(id, &rebuilt).unwrap();
    let stored = store.run(id).unwrap();
    assert!(stored.row.interrupted);
    assert_eq!(stored.row.summary.requests_completed, 10);
    assert!(store.open_streams().unwrap().is_empty());
    assert_eq!(store.interval_count(id).unwrap(), 1);
    // Deleting the run takes its intervals with it.
    store.delete_run(id).unwrap();
    assert_eq!(store.interval_count(id).unwrap(), 0);
    store.check_integrity().unwrap();
}

#[test]
fn a_schema_2_file_opens_under_the_current_schema_with_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    {
        // The previous schema, made by its own migrations' SQL, and a run stored as schema 2
        // stored them (compressed document, status column).
        let conn = rusqlite::Connection::open(&path).unwrap();
        for m in &MIGRATIONS[..2] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
    }
    {
        // Runs saved by this build into a file still at version 2 are what version 2 wrote:
        // the columns of migration 3 are tables of their own. Write one through SQL as a
        // version-2 loadlab did, from a store made at version 2 elsewhere.
        let (_d, other_path, other) = temp_store();
        let id = other.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
        drop(other);
        let src = rusqlite::Connection::open(&other_path).unwrap();
        src.execute("ATTACH DATABASE ?1 AS v2", [path.to_str().unwrap()])
            .unwrap();
        // The columns version 2 has (later migrations added more to main.runs).
        let columns: Vec<String> = src
            .prepare("SELECT name FROM pragma_table_info('runs', 'v2')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let columns = columns.join(", ");
        src.execute(
            &format!(
                "INSERT INTO v2.runs ({columns}) SELECT {columns} FROM main.runs WHERE id = ?1"
            ),
            [id.0],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest_version());
    assert!(latest_version() >= 3);
    store.check_integrity().unwrap();
    let rows = store.list_runs(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 1);
    let stored = store.run(rows[0].id).unwrap();
    assert_eq!(
        stored.result.measured.requests.completed,
        fixture("ok").measured.requests.completed
    );
    assert!(store.open_streams().unwrap().is_empty());
    // And the file takes streamed runs now.
    let id = store
        .begin_run(&fixture("ok"), &RunMeta::default(), &writer())
        .unwrap();
    store.append_interval(id, 0, &interval(0)).unwrap();
    assert_eq!(store.interval_count(id).unwrap(), 1);
}
