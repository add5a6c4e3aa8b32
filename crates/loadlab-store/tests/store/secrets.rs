//! Secrets never reach the store: each secret header (all four, any case, every command-line
//! form) and URL password is redacted before anything is written, in the result, its
//! configuration and environment, and an experiment's plan. Checked on the file's raw bytes,
//! and on the decompressed result documents, which raw bytes alone could not show.

use crate::support::{
    fixture, json_file_bytes, redacted, secret_config, secret_environment, temp_store,
    with_secrets, SECRET,
};
use loadlab_store::{ExperimentSlot, RunMeta, REDACTED};
use serde_json::Value;
use std::path::Path;

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The database, its write-ahead log and its shared-memory index, as bytes.
fn raw_files(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let path = format!("{}{suffix}", db.display());
            std::fs::read(&path).ok().map(|bytes| (path, bytes))
        })
        .collect()
}

#[test]
fn secrets_never_reach_the_database_file() {
    let (_dir, path, store) = temp_store();
    let experiment = store
        .create_experiment(
            "secrets",
            Path::new("exp.toml"),
            "h1",
            &serde_json::json!({"headers": {"Cookie": "S3CRET-30"},
                                 "url": "http://x:S3CRET-31@h/"}),
        )
        .unwrap();
    let meta = RunMeta {
        tag: Some("secret-run".into()),
        experiment: Some(ExperimentSlot {
            experiment,
            variant: "fast".into(),
            block: 0,
            repetition: 0,
        }),
        config: Some(secret_config()),
        environment: Some(secret_environment()),
        revision: Some("0123abcd".into()),
        // A branch is text a CI variable supplied: redacted like any other.
        branch: Some("http://x:S3CRET-32@h/".into()),
    };
    let result = with_secrets();
    let id = store.save_run(&result, &meta).unwrap();

    let files = raw_files(&path);
    assert!(files.iter().any(|(p, _)| p.ends_with("-wal")), "WAL mode");
    for (file, bytes) in &files {
        assert!(!contains(bytes, SECRET), "{file} holds a secret");
    }
    // The search can see plain columns: the command line's harmless marker is there.
    assert!(files.iter().any(|(_, b)| contains(b, "visible-marker")));

    let stored = store.run(id).unwrap();
    let export = store.export_json(id).unwrap();
    assert!(!export.contains(SECRET), "{export}");
    for text in [
        stored.config.unwrap().to_string(),
        stored.environment.unwrap().to_string(),
        store.experiment(experiment).unwrap().plan.to_string(),
    ] {
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains(REDACTED), "{text}");
    }
    drop(store);
    // Closing checkpoints the log into the database file: still nothing.
    for (file, bytes) in raw_files(&path) {
        assert!(!contains(&bytes, SECRET), "{file} holds a secret");
    }
}

#[test]
fn each_header_form_and_url_password_is_redacted() {
    let r = redacted(&with_secrets());
    let expected_command = [
        "loadlab",
        "run",
        "-H",
        "Authorization: <redacted>",
        "-HcOOkie: <redacted>",
        "--header=X-API-KEY: <redacted>",
        "--header",
        "proxy-authorization: <redacted>",
        "-H",
        "x-api-key:<redacted>",
        "--header=AUTHORIZATION:<redacted>",
        "-qH",
        "Cookie:<redacted>",
        "--tag",
        "visible-marker",
        "http://alice:<redacted>@127.0.0.1:18080/",
    ];
    assert_eq!(r.command, expected_command);
    assert_eq!(r.target.url, "http://alice:<redacted>@127.0.0.1:18080/");
    assert_eq!(
        r.load.plan,
        "closed loop: 20 connections, Authorization: <redacted>"
    );
    assert!(r
        .verdicts
        .contains(&"the server answered 401 to Cookie: <redacted>".to_string()));
    assert!(r
        .warnings
        .contains(&"https://bob:<redacted>@example.invalid/x redirected".to_string()));
    assert_eq!(
        r.measured.error_details["status"],
        r#"{"X-Api-Key": "<redacted>"}"#
    );
    let server = r.server.as_ref().unwrap();
    assert_eq!(
        server.description,
        "./server --upstream http://u:<redacted>@db/"
    );
    assert!(!json_file_bytes(&r).contains(SECRET));
    // Redacting again changes nothing, so the CLI and the store may both apply it.
    assert_eq!(redacted(&r), r);
}

/// Plants a secret in every string of a real result (histograms aside) and checks that
/// [`loadlab_store::redact`] reaches each: a text field added to the result later and not
/// redacted fails here.
#[test]
fn redaction_reaches_every_text_of_a_result() {
    let mut value = serde_json::to_value(crate::support::with_server()).unwrap();
    let mut planted = 0;
    plant(&mut value, &mut planted, false);
    assert!(planted > 20, "planted {planted}");
    let mut result: loadlab_result::RunResult = serde_json::from_value(value).unwrap();
    loadlab_store::redact(&mut result);
    let text = json_file_bytes(&result);
    assert!(!text.contains(SECRET), "{text}");
}

fn plant(v: &mut Value, planted: &mut usize, in_histograms: bool) {
    match v {
        Value::String(s) if !in_histograms => {
            s.push_str(" Cookie: S3CRET-40");
            *planted += 1;
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| plant(i, planted, in_histograms)),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                plant(v, planted, in_histograms || k.starts_with("histogram"));
            }
        }
        _ => {}
    }
}

#[test]
fn the_store_exports_what_run_json_writes_after_the_same_redaction() {
    let (_dir, _path, store) = temp_store();
    for result in [with_secrets(), fixture("open")] {
        // What the CLI does before `--json`: redact, then the JSON exporter's bytes.
        let written = json_file_bytes(&redacted(&result));
        let id = store.save_run(&result, &RunMeta::default()).unwrap();
        crate::support::assert_same_text(&store.export_json(id).unwrap(), &written, "export");
    }
}
