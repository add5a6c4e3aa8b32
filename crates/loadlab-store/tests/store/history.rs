//! Runs as a history: each run keeps the revision and branch it measured, and a series (a
//! tag, one variant of every experiment of a name, or a scenario) reads back oldest first with them and
//! with its environment; interrupted runs stay out.

use crate::support::{fixture, temp_store};
use loadlab_store::{ExperimentSlot, RunMeta, Series, StoreError};
use serde_json::json;
use std::path::Path;

#[test]
fn a_tag_reads_back_as_a_series_with_revisions_branches_and_environments() {
    let (_dir, _path, store) = temp_store();
    let result = fixture("ok");
    for (revision, branch) in [("aaa1", "main"), ("bbb2", "main"), ("ccc3", "topic")] {
        let meta = RunMeta {
            tag: Some("nightly".into()),
            environment: Some(json!({"cpu_model": "test CPU", "kernel": "6.1"})),
            revision: Some(revision.into()),
            branch: Some(branch.into()),
            ..RunMeta::default()
        };
        store.save_run(&result, &meta).unwrap();
    }
    let mut interrupted = result.clone();
    interrupted.interrupted = true;
    let meta = RunMeta {
        tag: Some("nightly".into()),
        revision: Some("ddd4".into()),
        ..RunMeta::default()
    };
    store.save_run(&interrupted, &meta).unwrap();
    // Another tag's runs are another series.
    store
        .save_run(
            &result,
            &RunMeta {
                tag: Some("other".into()),
                ..RunMeta::default()
            },
        )
        .unwrap();

    let runs = store.series_runs(&Series::parse("nightly")).unwrap();
    let got: Vec<(Option<&str>, Option<&str>)> = runs
        .iter()
        .map(|r| (r.row.revision.as_deref(), r.row.branch.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (Some("aaa1"), Some("main")),
            (Some("bbb2"), Some("main")),
            (Some("ccc3"), Some("topic"))
        ],
        "oldest first, the interrupted run left out"
    );
    assert_eq!(runs[0].environment.as_ref().unwrap()["kernel"], "6.1");
    assert!(runs.windows(2).all(|w| w[0].row.id < w[1].row.id));
    // `runs list` and `runs show` read the same columns.
    let shown = store.run(runs[1].row.id).unwrap();
    assert_eq!(shown.row.revision.as_deref(), Some("bbb2"));

    let err = store.series_runs(&Series::parse("nobody")).unwrap_err();
    assert!(matches!(err, StoreError::NoTag(_)), "{err}");

    // The list a page picks a series from: completed runs only, most runs first.
    let listed: Vec<(String, u64, u64)> = store
        .series_list(10)
        .unwrap()
        .into_iter()
        .map(|s| (s.spec, s.runs, s.revisions))
        .collect();
    assert_eq!(listed, [("nightly".into(), 3, 3), ("other".into(), 1, 0)]);
    assert_eq!(store.series_list(1).unwrap().len(), 1, "bounded");
}

#[test]
fn a_variant_spans_every_experiment_of_its_name() {
    let (_dir, _path, store) = temp_store();
    let result = fixture("ok");
    for (i, revision) in ["r1", "r2"].iter().enumerate() {
        let id = store
            .create_experiment("nightly-exp", Path::new("e.toml"), "h", &json!({}))
            .unwrap();
        for variant in ["fast", "slow"] {
            let meta = RunMeta {
                experiment: Some(ExperimentSlot {
                    experiment: id,
                    variant: variant.into(),
                    block: i as u32,
                    repetition: 0,
                }),
                revision: Some(revision.to_string()),
                ..RunMeta::default()
            };
            store.save_run(&result, &meta).unwrap();
        }
    }
    let runs = store
        .series_runs(&Series::parse("nightly-exp:fast"))
        .unwrap();
    let revisions: Vec<_> = runs.iter().map(|r| r.row.revision.clone()).collect();
    assert_eq!(revisions, [Some("r1".into()), Some("r2".into())]);
    let err = store
        .series_runs(&Series::parse("nightly-exp:medium"))
        .unwrap_err();
    assert!(err.to_string().contains("check both names"), "{err}");
}

#[test]
fn a_scenario_is_a_series_whatever_tag_or_experiment_its_runs_had() {
    let (_dir, _path, store) = temp_store();
    let scenario = fixture("scenario");
    let name = scenario.scenario.as_ref().unwrap().name.clone();
    let mut renamed = scenario.clone();
    renamed.scenario.as_mut().unwrap().name = "another".into();
    for (result, tag, revision) in [
        (&scenario, None, "aaa1"),
        (&renamed, None, "aaa1"),
        (&scenario, Some("nightly"), "bbb2"),
        (&fixture("ok"), None, "bbb2"),
    ] {
        let meta = RunMeta {
            tag: tag.map(str::to_string),
            revision: Some(revision.into()),
            ..RunMeta::default()
        };
        store.save_run(result, &meta).unwrap();
    }
    let runs = store
        .series_runs(&Series::parse(&format!("scenario={name}")))
        .unwrap();
    let got: Vec<(Option<&str>, Option<&str>)> = runs
        .iter()
        .map(|r| (r.row.revision.as_deref(), r.row.tag.as_deref()))
        .collect();
    assert_eq!(got, [(Some("aaa1"), None), (Some("bbb2"), Some("nightly"))]);
    let err = store
        .series_runs(&Series::parse("scenario=nobody"))
        .unwrap_err();
    assert!(matches!(err, StoreError::NoScenario(_)), "{err}");
    assert!(err.to_string().contains("`nobody`"), "{err}");
}

/// Runs saved before the store knew scenarios (schema 4, results compressed) get theirs from
/// their results when the file is migrated.
#[test]
fn runs_saved_before_the_scenario_column_are_found_after_the_migration() {
    let (_dir, path, store) = temp_store();
    let scenario = fixture("scenario");
    let name = scenario.scenario.as_ref().unwrap().name.clone();
    store.save_run(&scenario, &RunMeta::default()).unwrap();
    store.save_run(&fixture("ok"), &RunMeta::default()).unwrap();
    drop(store);
    // The file as version 4 left it: no scenario column, no capacity searches.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE capacity_probes; DROP TABLE capacity_searches; \
         DROP INDEX runs_by_scenario; ALTER TABLE runs DROP COLUMN scenario; \
         PRAGMA user_version = 4;",
    )
    .unwrap();
    let encodings: Vec<String> = conn
        .prepare("SELECT result_encoding FROM runs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(encodings, ["zlib", "zlib"]);
    drop(conn);
    let store = loadlab_store::Store::open(&path).unwrap();
    let runs = store
        .series_runs(&Series::parse(&format!("scenario={name}")))
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].row.id.0, 1);
}
