//! Runs written, read back and exported: the export is byte for byte what `run --json`
//! writes, the result parses back equal, the summary columns hold the measured figures.

use crate::support::{
    assert_same_text, fixture, fixture_texts, json_file_bytes, redacted, temp_store, with_server,
};
use loadlab_store::{Filter, RunMeta, RunStatus, StoreError, Summary};
use serde_json::json;

#[test]
fn each_fixture_is_stored_read_back_and_exported_byte_identical() {
    let (_dir, _path, store) = temp_store();
    for (name, text) in fixture_texts() {
        let result: loadlab_result::RunResult = serde_json::from_str(&text).unwrap();
        let meta = RunMeta {
            tag: Some(name.trim_end_matches(".json").into()),
            config: Some(json!({"connections": 20})),
            environment: Some(json!({"cpu_model": "test CPU", "governor": "performance"})),
            ..RunMeta::default()
        };
        let id = store.save_run(&result, &meta).unwrap();
        let expected = redacted(&result);
        let exported = store.export_json(id).unwrap();
        assert_same_text(&exported, &json_file_bytes(&expected), &name);
        assert_same_text(&exported, &loadlab_store::export_text(&expected), &name);
        // The fixtures hold no secrets, so the store exports what `run --json` wrote (the
        // checked-in copies lost their final newline; the exporter writes one).
        assert_same_text(exported.trim_end(), text.trim_end(), &name);
        let stored = store.run(id).unwrap();
        assert_eq!(
            stored.result, expected,
            "{name}: parses back to the same numbers"
        );
        assert_eq!(stored.config, meta.config);
        assert_eq!(stored.environment, meta.environment);
        assert_eq!(stored.row.tag, meta.tag);
        assert_eq!(stored.row.command, expected.command);
        assert_eq!(stored.row.summary, Summary::of(&expected), "{name}");
    }
}

#[test]
fn every_summary_column_holds_its_figure() {
    let (_dir, _path, store) = temp_store();
    let result = with_server();
    let id = store.save_run(&result, &RunMeta::default()).unwrap();
    let row = store.run(id).unwrap().row;
    let s = &row.summary;
    let m = &result.measured;
    assert_eq!(row.status, RunStatus::ServerExited);
    assert!(!row.interrupted);
    assert_eq!(s.load_model, "closed_loop");
    assert_eq!(s.target_url, "http://127.0.0.1:18080/");
    assert_eq!(
        (s.requests_issued, s.requests_completed, s.requests_failed),
        (20000, 20000, 0)
    );
    assert_eq!(s.rps, m.requests.per_second);
    assert_eq!(s.latency_p90_us, Some(m.latency_us.as_ref().unwrap().p90));
    assert_eq!(
        s.latency_p99_9_us,
        Some(m.latency_us.as_ref().unwrap().p99_9)
    );
    assert_eq!(s.error_rate, Some(0.0));
    assert_eq!(s.busiest_second_sent_bytes, Some(m.bytes.max_sent_per_s));
    assert_eq!(s.server_cpu_p50_cores, Some(0.5));
    assert_eq!(s.server_cpu_p99_cores, Some(0.875));
    assert_eq!(s.server_rss_p99_bytes, Some(3_500_000));
    assert_eq!(s.server_memory_p99_bytes, Some(5_250_000));
    assert_eq!(
        s.generator_cpu_s_per_100k,
        result.generator.cpu_s_per_100k_requests
    );
    assert_eq!(s.cold_start, Some(true));
    assert_eq!(s.ready_s, Some(0.25));

    let refused = store
        .save_run(&fixture("refused"), &RunMeta::default())
        .unwrap();
    let s = store.run(refused).unwrap().row.summary;
    assert_eq!(s.error_rate, Some(1.0));
    assert_eq!((s.latency_p50_us, s.server_cpu_p50_cores), (None, None));
}

#[test]
fn a_run_cut_short_is_stored_interrupted() {
    let (_dir, path, store) = temp_store();
    let mut result = fixture("open");
    result.interrupted = true;
    let id = store.save_run(&result, &RunMeta::default()).unwrap();
    let row = store.run(id).unwrap().row;
    assert!(row.interrupted);
    assert_eq!(row.status, RunStatus::Interrupted);
    let conn = rusqlite::Connection::open(path).unwrap();
    let (flag, status): (i64, String) = conn
        .query_row(
            "SELECT interrupted, status FROM runs WHERE id = ?1",
            [id.0],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((flag, status.as_str()), (1, "interrupted"));
}

#[test]
fn lists_filter_and_put_the_newest_first() {
    let (_dir, _path, store) = temp_store();
    let tagged = |tag: &str| RunMeta {
        tag: Some(tag.into()),
        ..RunMeta::default()
    };
    let a = store.save_run(&fixture("ok"), &tagged("base")).unwrap();
    let b = store.save_run(&fixture("open"), &tagged("cand")).unwrap();
    let mut cut = fixture("ok");
    cut.interrupted = true;
    let c = store.save_run(&cut, &tagged("base")).unwrap();
    let ids = |f: Filter| -> Vec<_> {
        store
            .list_runs(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    assert_eq!(ids(Filter::default()), [c, b, a]);
    let base = Filter {
        tag: Some("base".into()),
        ..Filter::default()
    };
    assert_eq!(ids(base.clone()), [c, a]);
    assert_eq!(
        ids(Filter {
            completed_only: true,
            ..base.clone()
        }),
        [a]
    );
    assert_eq!(
        ids(Filter {
            limit: Some(1),
            ..Filter::default()
        }),
        [c]
    );
}

/// `loadlab ui`'s filters: part of the target, the start of a revision, a range of days.
#[test]
fn lists_filter_by_target_revision_and_day() {
    let (_dir, _path, store) = temp_store();
    let save = |target: &str, revision: &str, day: &str| {
        let mut result = fixture("ok");
        result.target.url = target.into();
        result.started_at = format!("{day}T10:00:00Z");
        let meta = RunMeta {
            revision: Some(revision.into()),
            ..RunMeta::default()
        };
        store.save_run(&result, &meta).unwrap()
    };
    let a = save("http://api.test/users", "1a2b3c4d", "2026-11-01");
    let b = save("http://api.test/orders", "1a2bffff", "2026-11-15");
    let c = save("http://web.test/", "9999aaaa", "2026-12-01");
    let ids = |f: Filter| -> Vec<_> {
        store
            .list_runs(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    };
    let with =
        |target: Option<&str>, revision: Option<&str>, since: Option<&str>, until: Option<&str>| {
            ids(Filter {
                target: target.map(Into::into),
                revision: revision.map(Into::into),
                since: since.map(Into::into),
                until: until.map(Into::into),
                ..Filter::default()
            })
        };
    assert_eq!(with(Some("api.test"), None, None, None), [b, a]);
    assert_eq!(with(None, Some("1a2b"), None, None), [b, a]);
    assert_eq!(with(None, Some("1a2b3"), None, None), [a]);
    assert_eq!(with(None, None, Some("2026-11-15"), None), [c, b]);
    assert_eq!(with(None, None, None, Some("2026-11-15")), [b, a]);
    assert_eq!(
        with(
            Some("test"),
            Some("9"),
            Some("2026-11-02"),
            Some("2026-12-31")
        ),
        [c]
    );
    // A wildcard is text, not a pattern.
    assert_eq!(with(Some("%"), None, None, None), []);
}

#[test]
fn a_deleted_run_is_gone_and_its_id_never_comes_back() {
    let (_dir, _path, store) = temp_store();
    let first = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    store.delete_run(first).unwrap();
    assert!(matches!(store.run(first), Err(StoreError::NoRun(id)) if id == first));
    let err = store.delete_run(first).unwrap_err().to_string();
    assert_eq!(
        err,
        format!("no run with id {first}: see `loadlab runs list`")
    );
    let second = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    assert!(second > first, "ids are not reused: {first} then {second}");
    store.check_integrity().unwrap();
}

#[test]
fn tags_that_would_be_misread_are_refused() {
    let (_dir, _path, store) = temp_store();
    for tag in ["17", "exp:fast", "x@all", "two words"] {
        let meta = RunMeta {
            tag: Some(tag.into()),
            ..RunMeta::default()
        };
        let err = store.save_run(&fixture("ok"), &meta).unwrap_err();
        assert!(matches!(err, StoreError::InvalidTag { .. }), "{tag}: {err}");
    }
    assert!(store.list_runs(&Filter::default()).unwrap().is_empty());
}

#[test]
fn a_new_file_is_in_wal_mode_at_the_latest_schema() {
    let (_dir, path, store) = temp_store();
    assert_eq!(
        store.schema_version().unwrap(),
        loadlab_store::schema::latest_version()
    );
    assert_eq!(store.path(), path);
    // The journal mode is kept in the file; any other connection sees it.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let missing = StoreError::Open {
        path: "x".into(),
        source: rusqlite::Error::InvalidQuery,
    };
    assert!(missing.to_string().contains("check the path"));
    let err = loadlab_store::Store::open(path.join("no/such/dir.db")).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
}

/// An experiment and a `loadlab run --save` may write to one file at once: the second
/// writer waits for the first (busy timeout) instead of failing.
#[test]
fn two_writers_on_one_file_both_succeed() {
    let (_dir, path, _store) = temp_store();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = loadlab_store::Store::open(&path).unwrap();
                let result = fixture("open");
                let meta = RunMeta {
                    tag: Some(format!("writer-{w}")),
                    ..RunMeta::default()
                };
                for _ in 0..15 {
                    store.save_run(&result, &meta).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let store = loadlab_store::Store::open(&path).unwrap();
    assert_eq!(store.list_runs(&Filter::default()).unwrap().len(), 30);
    assert_eq!(store.resolve("writer-1@all").unwrap().len(), 15);
}
