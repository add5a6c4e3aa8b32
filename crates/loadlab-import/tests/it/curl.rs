//! `loadlab import curl`: commands as Chrome and Firefox copy them ("Copy as cURL"), and the
//! flags people add by hand, imported to one-step scenarios and read back.

use crate::common;

use common::{fixture, read_back, steps, str_at};
use loadlab_import::curl::{import, Options};
use loadlab_import::Imported;

fn curl(command: &str) -> Imported {
    import(command, &Options::default()).unwrap_or_else(|e| panic!("{command}: {e}"))
}

fn only_step(imported: &Imported) -> (toml::Table, toml::Table) {
    let doc = read_back(&imported.toml);
    let steps = steps(&doc);
    assert_eq!(steps.len(), 1);
    (doc, steps[0].clone())
}

fn notes(imported: &Imported) -> Vec<String> {
    imported.notes.iter().map(ToString::to_string).collect()
}

#[test]
fn a_command_copied_from_chrome() {
    let imported = curl(&fixture("curl-chrome.txt"));
    let (doc, step) = only_step(&imported);
    assert_eq!(doc["base_url"].as_str(), Some("{{BASE_URL}}"));
    assert_eq!(
        doc["variables"]["BASE_URL"].as_str(),
        Some("https://app.example.com")
    );
    assert_eq!(step["name"].as_str(), Some("POST /api/orders"));
    assert_eq!(
        step["method"].as_str(),
        Some("POST"),
        "--data-raw makes it a POST"
    );
    assert_eq!(step["url"].as_str(), Some("/api/orders?status=open&page=2"));
    // $'...' quoting: \' is a quote, \\n stays a JSON escape.
    let body = str_at(&step, &["body", "raw"]).unwrap();
    assert_eq!(
        body,
        r#"{"note":"it's a gift","lines":["a","b"],"text":"line one\nline two"}"#
    );
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["text"], "line one\nline two");
    let headers = step["headers"].as_table().unwrap();
    assert_eq!(headers.len(), 12, "{headers:?}");
    assert_eq!(headers["content-type"].as_str(), Some("application/json"));
    assert_eq!(headers["origin"].as_str(), Some("{{BASE_URL}}"));
    assert_eq!(headers["referer"].as_str(), Some("{{BASE_URL}}/orders"));
    assert_eq!(
        headers["sec-ch-ua"].as_str(),
        Some(r#""Chromium";v="124", "Google Chrome";v="124", "Not-A.Brand";v="99""#)
    );
    assert_eq!(
        headers["Cookie"].as_str(),
        Some("_ga=GA1.2.1234567890.1714550000; sid=s%3A8d7e6f5a4b3c2d1e0f"),
        "-b is the Cookie header"
    );
    assert!(imported.notes.is_empty(), "{:?}", notes(&imported));
}

#[test]
fn a_command_copied_from_firefox() {
    let imported = curl(&fixture("curl-firefox.txt"));
    let (_, step) = only_step(&imported);
    assert_eq!(step["method"].as_str(), Some("POST"));
    assert_eq!(step["url"].as_str(), Some("/api/login"));
    assert_eq!(
        str_at(&step, &["body", "raw"]),
        Some("username=alice&password=correct+horse")
    );
    let headers = step["headers"].as_table().unwrap();
    assert_eq!(
        headers["Accept-Encoding"].as_str(),
        Some("gzip, deflate, br")
    );
    assert_eq!(
        headers["Cookie"].as_str(),
        Some("_ga=GA1.2.1234567890.1714550000")
    );
    assert!(!headers.contains_key("Connection") && !headers.contains_key("TE"));
    let notes = notes(&imported);
    assert_eq!(
        notes,
        [
            "-H 'Connection: keep-alive': not carried over (loadlab sets it itself)",
            "-H 'TE: trailers': not carried over (loadlab sets it itself)",
        ]
    );
}

/// (command, method, url, raw body, headers)
type Case<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a [(&'a str, &'a str)],
);

#[test]
fn flags_people_type_by_hand() {
    let table: [Case; 8] = [
        // (command, method, url, raw body, headers)
        ("curl http://127.0.0.1:8080/x", "GET", "/x", None, &[]),
        (
            "curl -XPUT -H'X-A: 1' --url 'http://127.0.0.1:8080/y' -d a=1 -d b=2",
            "PUT",
            "/y",
            Some("a=1&b=2"),
            &[("X-A", "1"), ("Content-Type", "application/x-www-form-urlencoded")],
        ),
        (
            "curl --json '{\"a\":1}' 127.0.0.1:8080/j",
            "POST",
            "/j",
            Some("{\"a\":1}"),
            &[("Content-Type", "application/json"), ("Accept", "application/json")],
        ),
        (
            "curl -u alice:s3cret -A probe -e http://r/ http://h/",
            "GET",
            "/",
            None,
            &[("Authorization", "Basic YWxpY2U6czNjcmV0"), ("User-Agent", "probe"), ("Referer", "http://r/")],
        ),
        (
            "curl -G -d q=lamp -d page=2 http://h/search",
            "GET",
            "/search?q=lamp&page=2",
            None,
            &[],
        ),
        ("curl -I http://h/", "HEAD", "/", None, &[]),
        (
            "curl --data-urlencode 'q=a b&c' --data-urlencode '=x/y' http://h/",
            "POST",
            "/",
            Some("q=a%20b%26c&x%2Fy"),
            &[("Content-Type", "application/x-www-form-urlencoded")],
        ),
        (
            "curl --data-binary '{\"id\": \"{{ID}}\"}' -H 'Content-Type: application/json' {{HOST}}/items",
            "POST",
            "/items",
            Some("{\"id\": \"{{ID}}\"}"),
            &[("Content-Type", "application/json")],
        ),
    ];
    for (command, method, url, body, headers) in table {
        let imported = import(
            command,
            &Options {
                name: None,
                vars: vec![
                    ("ID".into(), "7".into()),
                    ("HOST".into(), "http://h".into()),
                ],
            },
        )
        .unwrap_or_else(|e| panic!("{command}: {e}"));
        let (_, step) = only_step(&imported);
        assert_eq!(step["method"].as_str(), Some(method), "{command}");
        assert_eq!(step["url"].as_str(), Some(url), "{command}");
        assert_eq!(str_at(&step, &["body", "raw"]), body, "{command}");
        let got: Vec<(String, String)> = step
            .get("headers")
            .and_then(|h| h.as_table())
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        for (k, v) in headers {
            assert!(
                got.contains(&(k.to_string(), v.to_string())),
                "{command}: {k} in {got:?}"
            );
        }
        assert_eq!(got.len(), headers.len(), "{command}: {got:?}");
    }
}

#[test]
fn a_multipart_form_with_a_file() {
    let imported =
        curl("curl -F 'note=hello' -F 'doc=@report.pdf;type=application/pdf' http://h/upload");
    let (_, step) = only_step(&imported);
    assert_eq!(step["method"].as_str(), Some("POST"));
    let parts = step["body"]["multipart"].as_table().unwrap();
    assert_eq!(parts["note"].as_str(), Some("hello"));
    assert_eq!(parts["doc"]["file"].as_str(), Some("report.pdf"));
}

/// curl sends a form field given twice twice; a scenario's multipart body names each field
/// once, so the first is kept and the second reported (the file was unreadable: a duplicate
/// key; found by the import_curl fuzz target).
#[test]
fn a_form_field_given_twice_is_kept_once_and_reported() {
    let imported = curl("curl -F 'tag=a' -F 'note=hi' -F 'tag=b' http://h/upload");
    let (_, step) = only_step(&imported);
    let parts = step["body"]["multipart"].as_table().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts["tag"].as_str(), Some("a"));
    assert!(
        notes(&imported)
            .contains(&"-F tag=b: form field tag repeated: only its first value kept".to_string()),
        "{:#?}",
        notes(&imported)
    );
}

#[test]
fn flags_without_a_place_in_a_scenario_are_reported_never_dropped_silently() {
    let imported =
        curl("curl -sSLk --max-time 5 --proxy http://p:3128 --frobnicate http://h/a http://h/b");
    let notes = notes(&imported);
    assert_eq!(
        notes,
        [
            "-s: not carried over (output flag)",
            "-S: not carried over (output flag)",
            "-L: not carried over (redirects are not followed: a 3xx answer is the step's answer)",
            "-k: not carried over (certificate checks were off: run with loadlab run --insecure (or --cacert FILE))",
            "--max-time 5: not carried over (use loadlab's --timeout)",
            "--proxy http://p:3128: not carried over (proxies are not supported)",
            "--frobnicate: an unknown flag, not carried over",
            "http://h/b: a second URL, not carried over (one step per command)",
        ]
    );
    for n in &notes {
        assert!(imported.toml.contains(&format!("#   - {n}")), "{n}");
    }
}

#[test]
fn malformed_commands_name_the_problem() {
    let table = [
        (
            "wget http://h/",
            "curl command: first word: expected `curl`, got \"wget\"",
        ),
        (
            "curl -H 'open http://h/",
            "curl command: quoting: an unterminated ' quote",
        ),
        ("curl -X", "curl command: -X: needs a value"),
        ("curl -s", "curl command: url: no URL in the command"),
        (
            "curl http://h/{{NOPE}}",
            "step \"GET /{{NOPE}}\": url: unknown variable {{NOPE}}",
        ),
    ];
    for (command, want) in table {
        let got = import(command, &Options::default())
            .map(|i| i.toml)
            .unwrap_err()
            .to_string();
        assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
    }
}
