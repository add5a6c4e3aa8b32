//! Runs as a history: each run keeps the revision and branch it measured, and a series (a
//! tag, or one variant of every experiment of a name) reads back oldest first with them and
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
