//! What a person types, as runs: ids, tags (every run, or `@last`), `EXPERIMENT:variant`, and
//! errors that say what would have worked.

use crate::support::{fixture, temp_store};
use loadlab_store::{ExperimentSlot, RunMeta, StoreError};
use std::path::Path;

#[test]
fn ids_tags_and_experiment_variants_resolve() {
    let (_dir, _path, store) = temp_store();
    let tagged = |tag: &str| RunMeta {
        tag: Some(tag.into()),
        ..RunMeta::default()
    };
    let first = store.save_run(&fixture("ok"), &tagged("baseline")).unwrap();
    let second = store
        .save_run(&fixture("open"), &tagged("baseline"))
        .unwrap();
    let plain = store
        .save_run(&fixture("refused"), &RunMeta::default())
        .unwrap();

    assert_eq!(store.resolve(&first.to_string()).unwrap(), [first]);
    assert_eq!(store.resolve(&format!(" {plain} ")).unwrap(), [plain]);
    assert_eq!(
        store.resolve("baseline").unwrap(),
        [second, first],
        "a tag means every run with it, newest first"
    );
    assert_eq!(store.resolve("baseline@all").unwrap(), [second, first]);
    assert_eq!(
        store.resolve("baseline@last").unwrap(),
        [second],
        "@last: the latest alone"
    );

    let file = Path::new("speed.toml");
    let plan = serde_json::json!({});
    let old = store.create_experiment("speed", file, "h", &plan).unwrap();
    let new = store.create_experiment("speed", file, "h", &plan).unwrap();
    let in_experiment = |experiment, variant: &str, block: u32, interrupted: bool| {
        let mut result = fixture("ok");
        result.interrupted = interrupted;
        let slot = ExperimentSlot {
            experiment,
            variant: variant.into(),
            block,
            repetition: block,
        };
        let meta = RunMeta {
            experiment: Some(slot),
            ..RunMeta::default()
        };
        store.save_run(&result, &meta).unwrap()
    };
    in_experiment(old, "fast", 0, false);
    let label = "fast[connections=50]";
    let b1 = in_experiment(new, label, 1, false);
    let b0 = in_experiment(new, label, 0, false);
    in_experiment(new, label, 2, true);
    let slow = in_experiment(new, "slow", 0, false);
    // The latest experiment of the name, completed runs only, in block order.
    assert_eq!(
        store.resolve("speed:fast[connections=50]").unwrap(),
        [b0, b1]
    );
    assert_eq!(store.resolve("speed:slow").unwrap(), [slow]);
}

#[test]
fn what_names_nothing_is_a_clear_error() {
    let (_dir, _path, store) = temp_store();
    store
        .save_run(
            &fixture("ok"),
            &RunMeta {
                tag: Some("baseline".into()),
                ..RunMeta::default()
            },
        )
        .unwrap();
    let id = store
        .create_experiment("speed", Path::new("s.toml"), "h", &serde_json::json!({}))
        .unwrap();
    let mut meta = RunMeta {
        experiment: Some(ExperimentSlot {
            experiment: id,
            variant: "fast".into(),
            block: 0,
            repetition: 0,
        }),
        ..RunMeta::default()
    };
    store.save_run(&fixture("ok"), &meta).unwrap();
    meta.experiment.as_mut().unwrap().variant = "slow".into();
    meta.experiment.as_mut().unwrap().block = 1;
    store.save_run(&fixture("ok"), &meta).unwrap();

    let message = |spec: &str| store.resolve(spec).unwrap_err().to_string();
    assert_eq!(message("42"), "no run with id 42: see `loadlab runs list`");
    assert_eq!(
        message("nightly"),
        "no run is tagged `nightly`: see `loadlab runs list`"
    );
    for spec in ["nightly@all", "nightly@last"] {
        assert_eq!(
            message(spec),
            "no run is tagged `nightly`: see `loadlab runs list`"
        );
    }
    assert_eq!(
        message("bench:fast"),
        "no experiment is named `bench`: see `loadlab runs list`"
    );
    // What the user typed is echoed escaped: a tag or a name holding a terminal escape
    // must not clear the screen or forge a line when the error is printed.
    assert_eq!(
        message("night\u{1b}[2J\r\nFAKE"),
        "no run is tagged `night\\u{1b}[2J\\r\\nFAKE`: see `loadlab runs list`"
    );
    assert_eq!(
        message("be\u{7}nch:fast"),
        "no experiment is named `be\\u{7}nch`: see `loadlab runs list`"
    );
    assert_eq!(
        message("speed:medium"),
        format!(
            "experiment `speed` (id {id}) has no completed run of variant `medium`; its \
             variants: fast, slow"
        )
    );
    for spec in ["", "@all", "@last", "speed:", ":fast", "a@b"] {
        assert!(
            matches!(store.resolve(spec), Err(StoreError::Unresolvable(_))),
            "{spec:?}: {}",
            message(spec)
        );
    }
    assert!(message("").contains("EXPERIMENT:variant"));
    assert_eq!(
        store
            .resolve("99999999999999999999999")
            .unwrap_err()
            .to_string(),
        "`99999999999999999999999` names no run: give a run id (42), a tag (baseline: every \
         run with it; baseline@last: the latest alone) or EXPERIMENT:variant; see `loadlab \
         runs list`"
    );
}
