//! `loadlab import har`: a Chrome recording of a shop (a page with its assets, a third-party
//! font and analytics, a login whose token later requests send, an order id reused) imported,
//! and the written TOML read back.

use crate::common;

use common::{fixture, read_back, steps, str_at};
use loadlab_import::har::{import, Options, Think};
use loadlab_import::Imported;

fn login(o: Options) -> Imported {
    import(
        &fixture("login.har"),
        &Options {
            label: "login.har".into(),
            ..o
        },
    )
    .expect("login.har imports")
}

fn names_of(doc: &toml::Table) -> Vec<String> {
    steps(doc)
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn captures(step: &toml::Table) -> Vec<(String, String, String)> {
    step.get("captures")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .map(|c| {
            let t = c.as_table().unwrap();
            let (kind, at) = t.iter().find(|(k, _)| *k != "var").unwrap();
            (
                t["var"].as_str().unwrap().to_string(),
                kind.clone(),
                at.as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_login_token_becomes_a_capture_and_later_requests_send_the_variable() {
    let imported = login(Options::default());
    let doc = read_back(&imported.toml);
    assert_eq!(
        names_of(&doc),
        [
            "GET /",
            "POST /api/login",
            "GET /api/orders",
            "GET /api/orders/o-20240501-0001",
            "PATCH /api/users/u-7f3a9c21",
            "GET /api/recommendations",
        ]
    );
    let steps = steps(&doc);
    assert_eq!(
        captures(&steps[1]),
        [
            ("TOKEN".into(), "json".into(), "$.token".into()),
            ("USER_ID".into(), "json".into(), "$.user.id".into()),
        ]
    );
    assert_eq!(
        captures(&steps[2]),
        [("ORDERS_ID".into(), "json".into(), "$.orders[0].id".into())]
    );
    for s in &steps[2..] {
        assert_eq!(
            str_at(s, &["headers", "authorization"]),
            Some("Bearer {{TOKEN}}")
        );
    }
    assert_eq!(steps[3]["url"].as_str(), Some("/api/orders/{{ORDERS_ID}}"));
    assert_eq!(steps[4]["url"].as_str(), Some("/api/users/{{USER_ID}}"));
    let form = steps[4]["body"]["form"].as_table().unwrap();
    assert_eq!(form["last_order"].as_str(), Some("{{ORDERS_ID}}"));
    assert_eq!(form["display_name"].as_str(), Some("Alice B"));
    assert!(str_at(&steps[4], &["headers", "content-type"]).is_none());
    // The login's own body is what the user typed: not a correlation (its password is a
    // secret, taken out: see below).
    assert_eq!(
        str_at(&steps[1], &["body", "raw"]),
        Some(r#"{"username": "alice", "password": "{{PASSWORD}}"}"#)
    );
    // Recorded with a 404: that is what the replay should expect.
    assert_eq!(steps[5]["checks"][0]["status"].as_integer(), Some(404));
    assert!(imported.toml.contains("base_url = \"{{BASE_URL}}\""));
    assert_eq!(
        str_at(&steps[1], &["headers", "origin"]),
        Some("{{BASE_URL}}"),
        "the origin follows the base"
    );

    // The loader's captures take the replay's own token and user id from a login answer.
    let loaded =
        loadlab_scenario::Scenario::from_toml_str(&imported.toml, std::path::Path::new("."))
            .unwrap();
    let mut values = loaded.new_values();
    let body = br#"{"token":"fresh-token-42","user":{"id":"u-99","name":"Bob"}}"#;
    let response = loadlab_scenario::Response {
        status: 200,
        headers: &[],
        body,
    };
    assert_eq!(
        loaded.steps[1].judge(&response, &mut values),
        loadlab_scenario::Verdict::Pass
    );
    let value = |name: &str| {
        let slot = loaded
            .variables
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.slot)
            .unwrap();
        values[slot].clone()
    };
    assert_eq!(value("TOKEN"), "fresh-token-42");
    assert_eq!(value("USER_ID"), "u-99");
    assert_eq!(
        doc["variables"]["BASE_URL"].as_str(),
        Some("https://app.example.com")
    );
}

#[test]
fn cookies_and_secret_headers_become_empty_variables_unless_kept() {
    let imported = login(Options::default());
    let doc = read_back(&imported.toml);
    let steps = steps(&doc);
    // _ga was in the browser before the recording: a secret. sid was set by the login:
    // the cookie jar sends it, so it is not written at all.
    for s in &steps {
        assert_eq!(
            str_at(s, &["headers", "cookie"]),
            Some("_ga={{COOKIE_GA}}"),
            "{s:?}"
        );
    }
    for s in &steps[2..] {
        assert_eq!(str_at(s, &["headers", "x-api-key"]), Some("{{X_API_KEY}}"));
    }
    let vars = doc["variables"].as_table().unwrap();
    assert_eq!(vars["COOKIE_GA"].as_str(), Some(""));
    assert_eq!(vars["X_API_KEY"].as_str(), Some(""));
    assert!(!imported.toml.contains("GA1.2.1234567890"));
    assert!(!imported.toml.contains("pk_live_51HxYzQ2eZvKYlo2C"));
    assert!(!imported.toml.contains("eyJhbGciOiJIUzI1NiJ9"));
    let notes: Vec<String> = imported.notes.iter().map(ToString::to_string).collect();
    assert!(notes.contains(&"cookie _ga: the recorded value was taken out; give it with --var COOKIE_GA=... (or import with --keep-secrets)".to_string()), "{notes:#?}");
    assert!(notes.iter().any(|n| n.starts_with(
        "header x-api-key: the recorded value was taken out; give it with --var X_API_KEY="
    )));

    let kept = login(Options {
        keep_secrets: true,
        ..Options::default()
    });
    let doc = read_back(&kept.toml);
    let steps = common::steps(&doc);
    assert_eq!(
        str_at(&steps[2], &["headers", "cookie"]),
        Some("_ga=GA1.2.1234567890.1714550000")
    );
    assert_eq!(
        str_at(&steps[2], &["headers", "x-api-key"]),
        Some("pk_live_51HxYzQ2eZvKYlo2C")
    );
    assert_eq!(
        str_at(&steps[2], &["headers", "authorization"]),
        Some("Bearer {{TOKEN}}"),
        "a captured token is the replay's own, whatever --keep-secrets says"
    );
}

#[test]
fn a_password_in_a_body_and_a_token_in_a_query_become_variables_unless_kept() {
    let imported = login(Options::default());
    assert!(
        !imported.toml.contains("correct horse"),
        "{}",
        imported.toml
    );
    let doc = read_back(&imported.toml);
    let all = steps(&doc);
    let body = str_at(&all[1], &["body", "raw"]).unwrap();
    // The layout and the other members stay as recorded.
    assert_eq!(body, r#"{"username": "alice", "password": "{{PASSWORD}}"}"#);
    assert_eq!(doc["variables"]["PASSWORD"].as_str(), Some(""));
    let notes: Vec<String> = imported.notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.iter().any(|n| n.starts_with(
            "body field password: the recorded value was taken out; give it with --var PASSWORD="
        )),
        "{notes:#?}"
    );
    let kept = login(Options {
        keep_secrets: true,
        ..Options::default()
    });
    assert!(kept.toml.contains("correct horse"));

    // A token in a query, a form's secret field, and a JSON value written with an escape
    // serde would not use (the body is then written anew, still without the secret).
    let input = har(&format!(
        "[{}, {}]",
        entry(
            "http://127.0.0.1:1/feed?page=2&access_token=abc123",
            Some(r#"{"user": "ann", "auth": {"client_secret": "s\u00e9cret"}, "author": "bob"}"#)
        ),
        entry("http://127.0.0.1:1/login", Some("user=ann&pwd=hunter2"))
            .replace("text/plain", "application/x-www-form-urlencoded"),
    ));
    let imported = import_small(&input);
    for secret in ["abc123", "hunter2", "u00e9cret", "sécret"] {
        assert!(
            !imported.toml.contains(secret),
            "{secret} in {}",
            imported.toml
        );
    }
    let doc = read_back(&imported.toml);
    let steps = steps(&doc);
    assert_eq!(
        steps[0]["url"].as_str(),
        Some("/feed?page=2&access_token={{ACCESS_TOKEN}}")
    );
    let body: serde_json::Value =
        serde_json::from_str(str_at(&steps[0], &["body", "raw"]).unwrap()).unwrap();
    assert_eq!(body["auth"]["client_secret"], "{{CLIENT_SECRET}}");
    assert_eq!(body["author"], "bob", "a field that is data stays");
    assert_eq!(str_at(&steps[1], &["body", "form", "pwd"]), Some("{{PWD}}"));
    assert_eq!(str_at(&steps[1], &["body", "form", "user"]), Some("ann"));
}

#[test]
fn a_var_given_at_import_fills_a_secret_and_retargets_the_base() {
    let imported = login(Options {
        vars: vec![
            ("COOKIE_GA".into(), "GA1.2.1.1".into()),
            ("BASE_URL".into(), "http://127.0.0.1:8080".into()),
        ],
        ..Options::default()
    });
    let doc = read_back(&imported.toml);
    let vars = doc["variables"].as_table().unwrap();
    assert_eq!(vars["COOKIE_GA"].as_str(), Some("GA1.2.1.1"));
    assert_eq!(vars["BASE_URL"].as_str(), Some("http://127.0.0.1:8080"));
    assert!(!vars.contains_key("COOKIE_GA_2"), "{vars:?}");
    assert_eq!(doc["base_url"].as_str(), Some("{{BASE_URL}}"));
    let notes: Vec<String> = imported.notes.iter().map(ToString::to_string).collect();
    assert!(
        !notes.iter().any(|n| n.contains("--var COOKIE_GA=")),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("--var X_API_KEY=")),
        "{notes:#?}"
    );
}

#[test]
fn computed_headers_are_dropped_and_shared_ones_become_defaults() {
    let imported = login(Options::default());
    let doc = read_back(&imported.toml);
    let defaults = doc["defaults"]["headers"].as_table().unwrap();
    let keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    for k in ["accept-language", "user-agent", "sec-ch-ua-platform"] {
        assert!(defaults.contains_key(k), "{keys:?}");
    }
    assert_eq!(defaults["sec-ch-ua-platform"].as_str(), Some("\"Linux\""));
    for s in steps(&doc) {
        let headers = s["headers"].as_table().unwrap();
        for dropped in [
            ":authority",
            ":path",
            "content-length",
            "if-none-match",
            "user-agent",
        ] {
            assert!(!headers.contains_key(dropped), "{dropped} in {headers:?}");
        }
    }
    assert!(imported
        .notes
        .iter()
        .any(|n| n.text.contains("If-None-Match / If-Modified-Since dropped")));
}

#[test]
fn assets_and_other_hosts_are_dropped_unless_asked_for() {
    let imported = login(Options::default());
    let notes: Vec<String> = imported.notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.contains(
            &"3 static assets (scripts, styles, images, fonts) dropped; --keep-assets keeps them"
                .to_string()
        ),
        "{notes:#?}"
    );
    assert!(notes.contains(&"2 requests to other hosts than app.example.com dropped (fonts.gstatic.com, www.google-analytics.com); --host HOST keeps another host instead".to_string()), "{notes:#?}");
    assert!(imported
        .toml
        .contains("from login.har (HAR 1.2, 6 of 11 requests kept)"));

    let assets = login(Options {
        keep_assets: true,
        ..Options::default()
    });
    let names = names_of(&read_back(&assets.toml));
    assert_eq!(names.len(), 9, "{names:?}");
    assert_eq!(
        names[1..4],
        [
            "GET /static/app.3f2a1c.js",
            "GET /static/style.css",
            "GET /favicon.ico"
        ]
    );

    // Another host instead (a scenario runs against one origin).
    let fonts = login(Options {
        keep_assets: true,
        host: Some("fonts.gstatic.com".into()),
        ..Options::default()
    });
    let doc = read_back(&fonts.toml);
    assert_eq!(names_of(&doc), ["GET /s/inter/v13/inter.woff2"]);
    assert_eq!(
        doc["variables"]["BASE_URL"].as_str(),
        Some("https://fonts.gstatic.com")
    );
}

#[test]
fn the_gaps_between_requests_are_think_times() {
    let think = |imported: &Imported| -> Vec<Option<String>> {
        steps(&read_back(&imported.toml))
            .iter()
            .map(|s| str_at(s, &["think", "fixed"]).map(str::to_string))
            .collect()
    };
    let recorded = think(&login(Options::default()));
    let ms = |v: &[Option<&str>]| v.iter().map(|s| s.map(str::to_string)).collect::<Vec<_>>();
    // The document ended at 0.120 s, the login started at 5.000 s; and so on.
    assert_eq!(
        recorded,
        ms(&[
            Some("4880ms"),
            Some("1420ms"),
            Some("2460ms"),
            Some("65ms"),
            Some("70ms"),
            None
        ])
    );
    let none = think(&login(Options {
        think: Think::None,
        ..Options::default()
    }));
    assert!(none.iter().all(Option::is_none), "{none:?}");
}

#[test]
fn pages_keep_their_requests_together() {
    let imported = login(Options {
        pages: true,
        ..Options::default()
    });
    let doc = read_back(&imported.toml);
    let steps = steps(&doc);
    assert_eq!(steps.len(), 2);
    assert_eq!(
        steps[0]["name"].as_str(),
        Some("page https://app.example.com/")
    );
    assert_eq!(
        steps[1]["name"].as_str(),
        Some("page https://app.example.com/orders")
    );
    let urls = |s: &toml::Table| -> Vec<String> {
        s["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["url"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(urls(&steps[0]), ["/", "/api/login"]);
    assert_eq!(
        urls(&steps[1]),
        [
            "/api/orders",
            "/api/orders/o-20240501-0001",
            "/api/users/u-7f3a9c21",
            "/api/recommendations"
        ]
    );
    assert!(steps[0].get("url").is_none());
    assert_eq!(str_at(&steps[0], &["think", "fixed"]), Some("1420ms"));
    // A page's requests run together: no capture can feed one to another, so the recorded
    // token is a secret like any other.
    assert!(steps.iter().all(|s| s.get("captures").is_none()));
    let orders = &steps[1]["requests"][0];
    assert_eq!(
        orders["headers"]["authorization"].as_str(),
        Some("Bearer {{AUTHORIZATION}}")
    );
}

/// Imports a recording made by [`har`] with the default options.
fn import_small(input: &str) -> Imported {
    import(
        input,
        &Options {
            label: "t.har".into(),
            ..Options::default()
        },
    )
    .unwrap()
}

fn har(entries: &str) -> String {
    format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "test"}}, "entries": {entries}}}}}"#
    )
}

fn entry(url: &str, body: Option<&str>) -> String {
    let post = match body {
        Some(text) => format!(
            r#", "postData": {{"mimeType": "text/plain", "text": {}}}"#,
            serde_json::Value::String(text.into())
        ),
        None => String::new(),
    };
    format!(
        r#"{{"startedDateTime": "2024-05-01T10:00:00.000Z", "time": 5,
            "request": {{"method": "POST", "url": "{url}", "headers": []{post}}},
            "response": {{"status": 200, "headers": [], "content": {{"mimeType": "text/plain"}}}}}}"#
    )
}

#[test]
fn literal_braces_in_a_recording_are_escaped() {
    let input = har(&format!(
        "[{}]",
        entry("http://127.0.0.1:1/t", Some("{{not a variable}}"))
    ));
    let imported = import_small(&input);
    let doc = read_back(&imported.toml);
    assert_eq!(
        steps(&doc)[0]["body"]["raw"].as_str(),
        Some("{{{{not a variable}}")
    );
}

#[test]
fn malformed_recordings_name_the_entry_and_the_field() {
    let o = Options {
        label: "bad.har".into(),
        ..Options::default()
    };
    let table = [
        ("<html>".to_string(), "HAR file bad.har is not JSON: expected value at line 1 column 1"),
        (r#"{"entries": []}"#.to_string(), "HAR file bad.har: log: missing"),
        (
            r#"{"log": {"version": "2.0", "entries": []}}"#.to_string(),
            "HAR file bad.har: log.version: \"2.0\" is not a HAR version loadlab reads (1.1 or 1.2)",
        ),
        (
            har(&format!("[{}, {}]", entry("http://127.0.0.1:1/a", None), entry("", None))),
            "entry 2: request.url: missing or empty",
        ),
        (
            har(r#"[{"startedDateTime": "soon", "request": {"method": "GET", "url": "http://h/"}}]"#),
            "entry 1: startedDateTime: \"soon\" is not an ISO 8601 date and time",
        ),
        (har("[]"), "HAR file bad.har: log.entries: no http(s) request in the recording"),
    ];
    for (input, want) in table {
        let got = import(&input, &o).map(|i| i.toml).unwrap_err().to_string();
        assert!(got.starts_with(want), "want {want:?}\n got {got:?}");
    }
}

/// Issue 46 item 6: 4,000 entries to one URL took 22 s to name (each name was checked
/// against every earlier one for every suffix tried). Every step gets its own name, in order.
#[test]
fn four_thousand_entries_to_one_url_are_named_in_order() {
    let n = 4_000;
    let entries: Vec<String> = (0..n)
        .map(|_| entry("http://127.0.0.1:1/same", None))
        .collect();
    let imported = import_small(&har(&format!("[{}]", entries.join(","))));
    let names: Vec<&str> = imported
        .scenario
        .steps
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names.len(), n);
    assert_eq!(names[0], "POST /same");
    assert_eq!(names[1], "POST /same (2)");
    assert_eq!(names[n - 1], format!("POST /same ({n})"));
}

/// A recording's text reaches the comments at the top of the file (the label, the hosts
/// dropped): a control character in it, which a TOML comment may not hold, is written as its
/// escape, and the file still reads back (found by the import_har fuzz target).
#[test]
fn control_characters_in_a_dropped_host_leave_the_file_readable() {
    let har = r#"{"log":{"version":"1.2","entries":[
      {"startedDateTime":"2026-01-01T00:00:00.000Z",
       "request":{"method":"GET","url":"https://shop.test/","headers":[]},
       "response":{"status":200,"headers":[]}},
      {"startedDateTime":"2026-01-01T00:00:01.000Z",
       "request":{"method":"GET","url":"https://cdn\u0001.test/a.js","headers":[]},
       "response":{"status":200,"headers":[]}}]}}"#;
    let done = import(
        har,
        &Options {
            label: "bell\u{7}.har".into(),
            ..Options::default()
        },
    )
    .expect("imports");
    assert!(done.toml.contains("cdn\\u{1}.test"), "{}", done.toml);
    assert!(done.toml.contains("bell\\u{7}.har"), "{}", done.toml);
    let doc = read_back(&done.toml);
    assert_eq!(names_of(&doc).len(), 1);
}

/// Issue 44: recorded URLs are read by the `url` crate. An entry whose URL it refuses is
/// dropped and named with the parser's reason (the rest of the recording still imports), and
/// a `--host` that names no host is an error naming the flag.
#[test]
fn an_entry_whose_url_is_not_one_is_dropped_and_named() {
    let har = r#"{"log":{"version":"1.2","entries":[
      {"startedDateTime":"2026-01-01T00:00:00.000Z",
       "request":{"method":"GET","url":"https://shop.test/","headers":[]},
       "response":{"status":200,"headers":[]}},
      {"startedDateTime":"2026-01-01T00:00:01.000Z",
       "request":{"method":"GET","url":"https://shop.test:99999/cart","headers":[]},
       "response":{"status":200,"headers":[]}}]}}"#;
    let named = || Options {
        label: "shop.har".into(),
        ..Options::default()
    };
    let done = import(har, &named()).expect("imports");
    let notes: Vec<String> = done.notes.iter().map(ToString::to_string).collect();
    assert!(
        notes.iter().any(|n| n.contains(
            "entry 2: \"https://shop.test:99999/cart\" is not a URL (invalid port number): dropped"
        )),
        "{notes:#?}"
    );
    assert_eq!(names_of(&read_back(&done.toml)).len(), 1);

    let err = import(
        har,
        &Options {
            host: Some("shop test".into()),
            ..named()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("--host") && err.contains("is not a URL"),
        "{err}"
    );
}
