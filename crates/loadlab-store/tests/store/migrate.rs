//! Migrations, from a file made with schema 1 only (`tests/fixtures/schema-v1.db`, written
//! by [`regenerate_schema_v1_fixture`] as loadlab's first store wrote runs): opening it
//! brings it to the latest version and every run stays readable, its new columns filled from
//! its result.
//!
//! To remake the fixture (only if it is lost: it stands for files already in the wild):
//! `cargo test -p loadlab-store --test store -- --ignored --exact migrate::regenerate_schema_v1_fixture`

use crate::support::{fixture, json_file_bytes, with_server};
use loadlab_store::schema::{latest_version, MIGRATIONS};
use loadlab_store::{Filter, RunMeta, RunStatus, Store, Summary};
use std::path::{Path, PathBuf};

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema-v1.db")
}

#[test]
#[ignore = "writes tests/fixtures/schema-v1.db; run by hand only"]
fn regenerate_schema_v1_fixture() {
    let path = fixture_path();
    let _ = std::fs::remove_file(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(MIGRATIONS[0].sql).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    let mut refused = fixture("refused");
    refused.interrupted = true;
    let runs = [
        (
            with_server(),
            Some("baseline"),
            Some(r#"{"connections":20}"#),
        ),
        (fixture("open"), Some("baseline"), None),
        (refused, None, None),
    ];
    for (result, tag, config) in runs {
        let m = &result.measured;
        let latency = m.latency_us.as_ref();
        conn.execute(
            "INSERT INTO runs (created_at, started_at, tag, interrupted, command, target_url, \
             load_model, requests_issued, requests_completed, requests_failed, rps, \
             latency_p50_us, latency_p99_us, latency_max_us, result_json, config_json, \
             environment_json) VALUES ('2026-11-22T04:00:00.000Z', ?1, ?2, ?3, ?4, ?5, ?6, \
             ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, '{\"cpu_model\":\"test CPU\"}')",
            rusqlite::params![
                result.started_at,
                tag,
                result.interrupted,
                serde_json::to_string(&result.command).unwrap(),
                result.target.url,
                result.load.model,
                m.requests.issued as i64,
                m.requests.completed as i64,
                m.requests.failed as i64,
                m.requests.per_second,
                latency.map(|l| l.p50),
                latency.map(|l| l.p99),
                latency.map(|l| l.max),
                json_file_bytes(&result),
                config,
            ],
        )
        .unwrap();
    }
    conn.execute_batch("VACUUM").unwrap();
}

#[test]
fn a_schema_1_file_migrates_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    // Never migrate the fixture itself.
    std::fs::copy(fixture_path(), &path).unwrap();
    let v1 = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = v1
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1, "the fixture is a schema-1 file");
    drop(v1);

    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest_version());
    assert!(latest_version() >= 2);
    store.check_integrity().unwrap();

    let rows = store.list_runs(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 3);
    for row in &rows {
        let stored = store.run(row.id).unwrap();
        // Old documents export as they were written, and parse.
        let export = store.export_json(row.id).unwrap();
        assert_eq!(export, json_file_bytes(&stored.result), "run {}", row.id);
        // Migration 2 filled the new columns, in SQL, with what the Rust summary computes.
        assert_summaries_match(&row.summary, &Summary::of(&stored.result));
        assert_eq!(row.experiment, None);
        assert_eq!(
            stored.environment,
            Some(serde_json::json!({"cpu_model": "test CPU"}))
        );
    }
    let statuses: Vec<RunStatus> = rows.iter().rev().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            RunStatus::ServerExited,
            RunStatus::Complete,
            RunStatus::Interrupted
        ]
    );
    let server_run = &rows[2].summary;
    assert_eq!(server_run.server_memory_p99_bytes, Some(5_250_000));
    assert_eq!(server_run.cold_start, Some(true));
    assert_eq!(server_run.ready_s, Some(0.25));

    // Old runs answer the new API, next to new runs.
    assert_eq!(store.resolve("baseline@last").unwrap(), [rows[1].id]);
    let new = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    assert!(new > rows[0].id);
    let id = store
        .create_experiment("after", Path::new("a.toml"), "h", &serde_json::json!({}))
        .unwrap();
    assert_eq!(store.experiment(id).unwrap().name, "after");
    drop(store);
    // Opening again finds nothing to do.
    assert_eq!(
        Store::open(&path).unwrap().schema_version().unwrap(),
        latest_version()
    );
}

/// SQLite's JSON parser and serde_json may differ in the last bit of a float.
fn assert_summaries_match(sql: &Summary, rust: &Summary) {
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
        (a, b) => a == b,
    };
    let floats = |s: &Summary| {
        [
            s.duration_s,
            Some(s.rps),
            s.latency_p50_us,
            s.latency_p90_us,
            s.latency_p99_us,
            s.latency_p99_9_us,
            s.latency_max_us,
            s.error_rate,
            s.server_cpu_p50_cores,
            s.server_cpu_p99_cores,
            s.generator_cpu_s_per_100k,
            s.ready_s,
        ]
    };
    for (i, (a, b)) in floats(sql).into_iter().zip(floats(rust)).enumerate() {
        assert!(
            close(a, b),
            "figure {i}: {a:?} in SQL, {b:?} from the result"
        );
    }
    let exact = |s: &Summary| {
        (
            s.target_url.clone(),
            s.load_model.clone(),
            [s.requests_issued, s.requests_completed, s.requests_failed],
            [s.bytes_sent, s.bytes_received, s.busiest_second_sent_bytes],
            [s.server_rss_p99_bytes, s.server_memory_p99_bytes],
            s.cold_start,
        )
    };
    assert_eq!(exact(sql), exact(rust));
}
