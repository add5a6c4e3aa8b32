//! Issue 46 item 6: imports whose names repeat thousands of times (5,000 Postman requests
//! of one name, 4,000 HAR entries to one URL) give every step its own name, in the order of
//! the source, and a file the loader takes. Counts and structure only: how long an import
//! takes is bench/import-scale.sh's to measure, not a test's to assert.

use crate::common::{read_back, steps};
use loadlab_import::{har, postman, Imported};
use std::collections::HashSet;

/// The names a step gets when `base` repeats `n` times: `base`, `base (2)`, ... `base (n)`.
fn repeated(base: &str, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| match i {
            1 => base.to_string(),
            i => format!("{base} ({i})"),
        })
        .collect()
}

/// Every step's name, and its (first) request's URL, in file order, from the TOML written.
fn names_and_urls(imported: &Imported) -> (Vec<String>, Vec<String>) {
    let doc = read_back(&imported.toml);
    let written = steps(&doc);
    let names = written
        .iter()
        .map(|s| s["name"].as_str().expect("a name").to_string())
        .collect();
    let urls = written
        .iter()
        .map(|s| s["url"].as_str().expect("a url").to_string())
        .collect();
    (names, urls)
}

fn assert_unique_and_in_order(names: &[String], want: &[String]) {
    assert_eq!(names.len(), want.len());
    let distinct: HashSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), names.len(), "every name once");
    if let Some(i) = (0..names.len()).find(|&i| names[i] != want[i]) {
        panic!("step {i} is named {:?}, not {:?}", names[i], want[i]);
    }
}

#[test]
fn five_thousand_postman_requests_of_one_name_are_named_apart_in_order() {
    let n = 5_000;
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name":"Get item","request":{{"method":"GET","url":"http://127.0.0.1:1/items/{i}"}}}}"#
            )
        })
        .collect();
    let collection = format!(
        r#"{{"info":{{"name":"same names","schema":"https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}},"item":[{}]}}"#,
        items.join(",")
    );
    let imported = postman::import(
        &collection,
        &postman::Options {
            label: "same.json".into(),
            ..postman::Options::default()
        },
    )
    .expect("imports");
    let (names, urls) = names_and_urls(&imported);
    assert_unique_and_in_order(&names, &repeated("Get item", n));
    // In the collection's order: step i requests item i.
    for (i, url) in urls.iter().enumerate() {
        assert_eq!(url, &format!("/items/{i}"), "step {i}");
    }
}

#[test]
fn four_thousand_har_entries_to_one_url_are_named_apart_in_order() {
    let n = 4_000;
    // One URL (the query apart, which a step's name leaves out), in recorded order.
    let entries: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"startedDateTime":"2026-01-01T10:00:{:02}.{:03}Z","time":1,"request":{{"method":"GET","url":"http://127.0.0.1:1/same?n={i}","headers":[]}},"response":{{"status":200,"headers":[],"content":{{"mimeType":"application/json"}}}}}}"#,
                i / 1000 * 2,
                i % 1000
            )
        })
        .collect();
    let recording = format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"t"}},"entries":[{}]}}}}"#,
        entries.join(",")
    );
    let imported = har::import(
        &recording,
        &har::Options {
            label: "same.har".into(),
            think: har::Think::None,
            ..har::Options::default()
        },
    )
    .expect("imports");
    let (names, urls) = names_and_urls(&imported);
    assert_unique_and_in_order(&names, &repeated("GET /same", n));
    for (i, url) in urls.iter().enumerate() {
        assert_eq!(url, &format!("/same?n={i}"), "step {i}");
    }
}
