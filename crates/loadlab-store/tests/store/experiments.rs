//! Experiments: created, marked, listed by variant, and resumed only for the same plan.

use crate::support::{fixture, temp_store};
use loadlab_store::{
    CompletedRun, ExperimentSlot, ExperimentStatus, RunId, RunMeta, Store, StoreError,
};
use std::path::Path;

fn plan() -> serde_json::Value {
    serde_json::json!({"arms": ["slow", "fast"], "repetitions": 2, "seed": 7})
}

fn save(
    store: &Store,
    experiment: loadlab_store::ExperimentId,
    variant: &str,
    block: u32,
    interrupted: bool,
) -> RunId {
    let mut result = fixture("ok");
    result.interrupted = interrupted;
    let meta = RunMeta {
        experiment: Some(ExperimentSlot {
            experiment,
            variant: variant.into(),
            block,
            repetition: block,
        }),
        ..RunMeta::default()
    };
    store.save_run(&result, &meta).unwrap()
}

#[test]
fn find_resumable_returns_the_completed_runs_of_the_same_plan_only() {
    let (_dir, _path, store) = temp_store();
    let file = Path::new("experiments/speed.toml");
    assert_eq!(store.find_resumable("speed", "hash-a").unwrap(), None);
    let id = store
        .create_experiment("speed", file, "hash-a", &plan())
        .unwrap();
    let a = save(&store, id, "slow", 0, false);
    let b = save(&store, id, "fast", 0, false);
    save(&store, id, "slow", 1, true); // cut short: must run again
    store
        .set_experiment_status(id, ExperimentStatus::Interrupted)
        .unwrap();

    let resumable = store.find_resumable("speed", "hash-a").unwrap().unwrap();
    assert_eq!(resumable.experiment, id);
    let done = |run, variant: &str| CompletedRun {
        run,
        variant: variant.into(),
        block: 0,
        repetition: 0,
    };
    assert_eq!(resumable.completed, [done(a, "slow"), done(b, "fast")]);

    // Another plan (the file changed): nothing to resume.
    assert_eq!(store.find_resumable("speed", "hash-b").unwrap(), None);
    assert_eq!(store.find_resumable("other", "hash-a").unwrap(), None);

    // Resumed and finished: nothing left to resume.
    store
        .set_experiment_status(id, ExperimentStatus::Running)
        .unwrap();
    save(&store, id, "slow", 1, false);
    save(&store, id, "fast", 1, false);
    store
        .set_experiment_status(id, ExperimentStatus::Complete)
        .unwrap();
    assert_eq!(store.find_resumable("speed", "hash-a").unwrap(), None);
    let stored = store.experiment(id).unwrap();
    assert_eq!(stored.status, ExperimentStatus::Complete);
    assert_eq!(stored.file, "experiments/speed.toml");
    assert_eq!(stored.plan, plan());
}

#[test]
fn an_experiments_runs_come_by_variant_in_block_order() {
    let (_dir, _path, store) = temp_store();
    let id = store
        .create_experiment("speed", Path::new("s.toml"), "h", &plan())
        .unwrap();
    let f1 = save(&store, id, "fast", 1, false);
    let s0 = save(&store, id, "slow", 0, false);
    let f0 = save(&store, id, "fast", 0, false);
    let cut = save(&store, id, "slow", 1, true);
    let by_variant = store.experiment_runs(id).unwrap();
    let ids = |v: &str| -> Vec<RunId> { by_variant[v].iter().map(|r| r.id).collect() };
    assert_eq!(by_variant.keys().collect::<Vec<_>>(), ["fast", "slow"]);
    assert_eq!(ids("fast"), [f0, f1]);
    assert_eq!(ids("slow"), [s0, cut]);
    assert!(by_variant["slow"][1].interrupted);
    assert!(matches!(
        store.experiment_runs(loadlab_store::ExperimentId(99)),
        Err(StoreError::NoExperimentId(_))
    ));
}

#[test]
fn a_completed_run_is_not_stored_twice_nor_for_a_missing_experiment() {
    let (_dir, _path, store) = temp_store();
    let id = store
        .create_experiment("speed", Path::new("s.toml"), "h", &plan())
        .unwrap();
    save(&store, id, "fast", 0, false);
    let again = RunMeta {
        experiment: Some(ExperimentSlot {
            experiment: id,
            variant: "fast".into(),
            block: 0,
            repetition: 0,
        }),
        ..RunMeta::default()
    };
    let err = store.save_run(&fixture("ok"), &again).unwrap_err();
    assert!(matches!(err, StoreError::DuplicateRun { .. }), "{err}");
    let missing = RunMeta {
        experiment: Some(ExperimentSlot {
            experiment: loadlab_store::ExperimentId(42),
            variant: "fast".into(),
            block: 0,
            repetition: 0,
        }),
        ..RunMeta::default()
    };
    let err = store.save_run(&fixture("ok"), &missing).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no experiment with id 42: see `loadlab runs list`"
    );
    assert_eq!(store.experiment_runs(id).unwrap()["fast"].len(), 1);
}
