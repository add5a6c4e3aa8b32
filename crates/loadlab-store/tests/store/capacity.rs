//! Capacity searches: a document kept as `document_text` makes it (redacted), its columns
//! listed newest first, its probes' runs linked in order (a deleted run's link emptied, not
//! the search), a probe run the store lacks refused; and a store of schema 5, made by the
//! previous migrations' SQL, opened and upgraded with its runs kept.

use crate::support::{fixture, temp_store};
use loadlab_store::capacity::document_text;
use loadlab_store::schema::{latest_version, MIGRATIONS};
use loadlab_store::{CapacityMeta, RunId, RunMeta, Store, StoreError};
use serde_json::json;

fn meta(runs: Vec<Option<RunId>>) -> CapacityMeta {
    CapacityMeta {
        kind: "capacity".into(),
        started_at: "2026-12-08T04:00:00Z".into(),
        target_url: "http://user:S3CRET-1@127.0.0.1:8080/".into(),
        tag: Some("capacity".into()),
        revision: Some("abc123".into()),
        branch: Some("main".into()),
        capacity: Some(950.0),
        verdict: "capacity 950/s (range 900-1000/s)".into(),
        stopped_by: None,
        probe_runs: runs,
    }
}

#[test]
fn a_search_is_kept_redacted_with_its_probes_runs() {
    let (_dir, _path, store) = temp_store();
    let a = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    let b = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    let document = json!({
        "kind": "capacity",
        "url": "http://user:S3CRET-1@127.0.0.1:8080/",
        "command": ["loadlab", "capacity", "-H", "Authorization: Bearer S3CRET-2"],
        "probes": [{"index": 1, "run_id": a.0}, {"index": 2}, {"index": 3, "run_id": b.0}],
    });
    let id = store
        .save_capacity(&document, &meta(vec![Some(a), None, Some(b)]))
        .unwrap();
    let text = store.capacity_document(id).unwrap();
    assert_eq!(text, document_text(&document).unwrap());
    assert!(text.ends_with("}\n") && !text.contains("S3CRET"), "{text}");
    assert!(text.contains("user:<redacted>@127.0.0.1"), "{text}");

    let rows = store.capacity_searches(10).unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.id, id);
    assert_eq!(
        row.meta.target_url,
        "http://user:<redacted>@127.0.0.1:8080/"
    );
    assert_eq!(row.meta.capacity, Some(950.0));
    assert_eq!(row.meta.probe_runs, [Some(a), None, Some(b)]);
    assert_eq!(row.meta.revision.as_deref(), Some("abc123"));

    // A probe's run deleted: the search stays, that link empties.
    store.delete_run(a).unwrap();
    let row = store.capacity_search(id).unwrap();
    assert_eq!(row.meta.probe_runs, [None, None, Some(b)]);
    assert_eq!(store.capacity_document(id).unwrap(), text);
    store.check_integrity().unwrap();

    // A link to a run the store does not hold is refused, and nothing is kept.
    let err = store
        .save_capacity(&document, &meta(vec![Some(RunId(99))]))
        .unwrap_err();
    assert!(matches!(err, StoreError::NoRun(RunId(99))), "{err}");
    assert_eq!(store.capacity_searches(10).unwrap().len(), 1);
    // A document whose redacted form does not read back as its type (a NaN is written as
    // null) is kept as the redacted JSON, not lost.
    assert_eq!(document_text(&f64::NAN).unwrap(), "null\n");
    let err = store
        .capacity_search(loadlab_store::CapacityId(7))
        .unwrap_err();
    assert!(err.to_string().contains("`loadlab runs capacity`"), "{err}");
}

/// A store the previous loadlab made (schema 5, with a run in it: the file as version 5 left
/// it, the tables migration 6 adds dropped, as `history.rs` makes a schema-4 file) is
/// read-only refused until migrated, then opens at the latest version with its run and no
/// searches, and keeps one.
#[test]
fn a_schema_5_store_upgrades() {
    let (_dir, path, store) = temp_store();
    let run = store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE capacity_probes; DROP TABLE capacity_searches; PRAGMA user_version = 5;",
    )
    .unwrap();
    drop(conn);
    let err = Store::open_read_only(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::NeedsMigration { found: 5, .. }),
        "{err}"
    );

    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), latest_version());
    assert!(latest_version() >= 6);
    assert_eq!(MIGRATIONS[5].version, 6);
    assert!(store.capacity_searches(10).unwrap().is_empty());
    store.run(run).unwrap();
    let id = store
        .save_capacity(&json!({"kind": "capacity"}), &meta(vec![Some(run)]))
        .unwrap();
    assert_eq!(
        store.capacity_search(id).unwrap().meta.probe_runs,
        [Some(run)]
    );
    store.check_integrity().unwrap();
}
