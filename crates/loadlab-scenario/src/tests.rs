//! Loading whole scenario files: what compiles to what, and every refusal naming the step and
//! the field.

use super::*;
use std::path::Path;

const PORTFOLIO: &str = r#"
name = "portfolio"
base_url = "{{URL}}"

[variables]
URL = "http://127.0.0.1:8080"
BLOG_ID = "001"

[defaults]
headers = { "User-Agent" = "loadlab-test" }

[[steps]]
name = "home"
url = "/"

[[steps]]
name = "blog"
url = "/blog/{{BLOG_ID}}"
think = { uniform = ["100ms", "300ms"] }

[[steps]]
name = "missing"
url = "/not-found"
[[steps.checks]]
status = 404
"#;

fn load(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(text, Path::new("."))
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn a_constant_scenario_is_encoded_at_load() {
    let s = load(PORTFOLIO).unwrap();
    assert_eq!(s.origin.url(), "http://127.0.0.1:8080");
    assert_eq!((s.origin.host.as_str(), s.origin.port), ("127.0.0.1", 8080));
    assert!(s.is_constant());
    assert_eq!(s.steps.len(), 3);
    let blog = text_of(s.steps[1].requests[0].constant_bytes(false).unwrap());
    assert!(
        blog.starts_with("GET /blog/001 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
        "{blog}"
    );
    assert!(blog.contains("User-Agent: loadlab-test\r\n"));
    assert_eq!(
        s.steps[1].think,
        Think::Uniform(Duration::from_millis(100), Duration::from_millis(300))
    );
    assert_eq!(s.steps[2].describe(), "GET /not-found");
    assert_eq!(s.steps[2].assertion_names(), ["status 404"]);
    assert_eq!(s.requests_per_iteration(), 3.0);
}

#[test]
fn overrides_replace_defaults_before_templates_compile() {
    let s = Scenario::parse(
        PORTFOLIO,
        Path::new("."),
        &[
            ("URL".into(), "http://localhost:9999".into()),
            ("BLOG_ID".into(), "7".into()),
        ],
    )
    .unwrap();
    assert_eq!(s.origin.authority, "localhost:9999");
    let blog = text_of(s.steps[1].requests[0].constant_bytes(false).unwrap());
    assert!(
        blog.starts_with("GET /blog/7 HTTP/1.1\r\nHost: localhost:9999\r\n"),
        "{blog}"
    );
    assert_eq!(
        s.variables.iter().find(|v| v.name == "URL").unwrap().source,
        VarSource::Override
    );
}

use std::time::Duration;

#[test]
fn captures_and_feeders_make_slots_and_bodies_take_their_forms() {
    let dir = std::env::temp_dir().join(format!("loadlab-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.csv"), "USER,PASS\nann,a1\nbob,b2\n").unwrap();
    let text = r#"
name = "login"
[[feeders]]
file = "users.csv"
order = "random"

[[steps]]
name = "login"
method = "post"
url = "http://127.0.0.1:1/login"
body.json = { user = "{{USER}}", pass = "{{PASS}}", remember = true, tags = ["a"] }
[[steps.captures]]
var = "TOKEN"
json = "$.token"

[[steps]]
name = "me"
url = "http://127.0.0.1:1/me?user={{USER}}"
headers = { Authorization = "Bearer {{TOKEN}}" }
body.form = { q = "a b", who = "{{USER}}" }
"#;
    let s = Scenario::from_toml_str(text, &dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!s.is_constant());
    assert_eq!(s.feeders[0].rows.len(), 2);
    let mut values = s.new_values();
    s.feed(0, 1, &mut Rng::new(1), &mut values);
    values[s.steps[0].captures[0].slot] = "tok".into();
    let login = &s.steps[0].requests[0];
    assert_eq!(login.method, "POST");
    let mut out = Vec::new();
    login.encode(&values, None, false, &mut out);
    let text = text_of(&out);
    let user = &values[s.feeders[0].slots[0]];
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(parsed["user"], user.as_str());
    assert_eq!(parsed["remember"], true);
    assert!(text.contains("Content-Type: application/json\r\n"));
    s.steps[1].requests[0].encode(&values, Some("sid=1"), false, &mut out);
    let me = text_of(&out);
    assert!(
        me.starts_with(&format!("GET /me?user={user} HTTP/1.1\r\n")),
        "{me}"
    );
    assert!(me.contains("Authorization: Bearer tok\r\n"));
    assert!(me.contains("Cookie: sid=1\r\n"));
    assert!(me.ends_with(&format!("\r\n\r\nq=a+b&who={user}")), "{me}");
}

#[test]
fn a_mix_picks_steps_by_weight() {
    let text = r#"
name = "mix"
mode = "mix"
base_url = "http://127.0.0.1:1"
[[steps]]
name = "often"
url = "/a"
weight = 3
[[steps]]
name = "rarely"
url = "/b"
"#;
    let s = load(text).unwrap();
    let mut rng = Rng::new(5);
    let often = (0..8000).filter(|_| s.pick(&mut rng) == 0).count();
    assert!((5_700..6_300).contains(&often), "{often} of 8000");
}

/// Weights whose sum overflows (issue 46, item 5: 1e308 + 1e308 is infinite, and every
/// iteration went to the 1e-308 step) keep their proportions.
#[test]
fn a_mix_of_huge_and_tiny_weights_keeps_their_proportions() {
    let text = r#"
name = "mix"
mode = "mix"
base_url = "http://127.0.0.1:1"
[[steps]]
name = "huge"
url = "/a"
weight = 1e308
[[steps]]
name = "huge too"
url = "/b"
weight = 1e308
[[steps]]
name = "tiny"
url = "/c"
weight = 1e-308
"#;
    let s = load(text).unwrap();
    assert_eq!(s.requests_per_iteration(), 1.0);
    let mut rng = Rng::new(5);
    let mut picks = [0usize; 3];
    for _ in 0..8000 {
        picks[s.pick(&mut rng)] += 1;
    }
    assert_eq!(picks[2], 0, "{picks:?}");
    assert!((3_700..4_300).contains(&picks[0]), "{picks:?}");
}

#[test]
fn a_page_lists_its_requests() {
    let text = r#"
name = "page"
base_url = "http://127.0.0.1:1"
[[steps]]
name = "home"
[[steps.requests]]
url = "/"
[[steps.requests]]
url = "/app.js"
"#;
    let s = load(text).unwrap();
    assert!(s.steps[0].page);
    assert_eq!(s.steps[0].describe(), "page of 2 requests");
    assert_eq!(s.requests_per_iteration(), 2.0);
}

/// Each malformed file, the item and field its error names, and a phrase of the message.
#[test]
fn malformed_scenarios_name_the_step_and_the_field() {
    let step = |extra: &str| {
        format!("name = \"s\"\nbase_url = \"http://127.0.0.1:1\"\n[[steps]]\nname = \"a\"\n{extra}")
    };
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (step(""), "step `a`", "url", "missing"),
        (step("url = \"/{{NOPE}}\""), "step `a`", "url", "unknown variable `{{NOPE}}`"),
        (
            step("url = \"/\"\nbody.raw = \"x\"\nbody.json = { a = 1 }"),
            "step `a`",
            "body",
            "two bodies (raw and json)",
        ),
        (step("url = \"/\"\nthink = { fixed = \"soon\" }"), "step `a`", "think.fixed", "not a duration"),
        // 2^64-1 s panicked a worker (issue 46, item 3): think times end where other durations do.
        (
            step("url = \"/\"\nthink = { fixed = \"18446744073709551615s\" }"),
            "step `a`",
            "think.fixed",
            "longer than loadlab allows (7 days)",
        ),
        (
            step("url = \"/\"\nthink = { exponential = \"18446744073709551615s\" }"),
            "step `a`",
            "think.exponential",
            "longer than loadlab allows (7 days)",
        ),
        (
            step("url = \"/\"\nthink = { uniform = [\"1s\", \"8days\"] }"),
            "step `a`",
            "think.uniform",
            "longer than loadlab allows (7 days)",
        ),
        (
            step("url = \"/\"\nthink = { fixed = \"1s\", exponential = \"1s\" }"),
            "step `a`",
            "think",
            "exactly one",
        ),
        (
            step("url = \"/\"\n[[steps.captures]]\nvar = \"T\"\njson = \"token\""),
            "step `a`",
            "captures[0].json",
            "must start with $",
        ),
        (
            step("url = \"/\"\n[[steps.captures]]\nvar = \"T\"\nregex = \"(\""),
            "step `a`",
            "captures[0].regex",
            "not a regular expression",
        ),
        (
            step("url = \"/\"\n[[steps.checks]]\nstatus = 700"),
            "step `a`",
            "checks[0].status",
            "not an HTTP status",
        ),
        (
            step("url = \"/\"\n[[steps.checks]]\nequals = 1"),
            "step `a`",
            "checks[0].equals",
            "needs json",
        ),
        (step("url = \"/\"\nweight = 2"), "step `a`", "weight", "mode = \"mix\""),
        (step("url = \"/\"\nheaders = { \"Bad Name\" = \"x\" }"), "step `a`", "headers", "not a header name"),
        (step("url = \"ftp://h/\""), "step `a`", "url", "unsupported scheme"),
        (
            format!("{}\n[[steps]]\nname = \"a\"\nurl = \"/\"", step("url = \"/\"")),
            "step `a`",
            "name",
            "must be unique",
        ),
        (
            "name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"/x\"".into(),
            "step `a`",
            "url",
            "no base_url",
        ),
        (
            "name = \"s\"\n[[feeders]]\nfile = \"no-such.csv\"\n[[steps]]\nname = \"a\"\nurl = \"http://h/\"".into(),
            "feeder 1 (no-such.csv)",
            "file",
            "cannot read",
        ),
        ("name = \"s\"\nmode = \"loop\"\n[[steps]]\nname = \"a\"\nurl = \"http://h/\"".into(), "scenario", "mode", "sequence"),
        ("name = \"s\"".into(), "scenario", "steps", "at least one"),
    ];
    for (text, item, field, phrase) in cases {
        match load(&text) {
            Err(e @ ScenarioError::Invalid { .. }) => {
                assert_eq!(e.item(), Some(item), "{text}\n{e}");
                assert_eq!(e.field(), Some(field), "{text}\n{e}");
                assert!(e.to_string().contains(phrase), "{text}\n{e}");
            }
            other => panic!("{text}\ngave {other:?}"),
        }
    }
}

#[test]
fn a_second_host_is_refused_with_both_named() {
    let text = "name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"http://a:1/\"\n[[steps]]\nname = \"b\"\nurl = \"http://b:2/x\"";
    let e = load(text).unwrap_err();
    assert_eq!(e.item(), Some("step `b`"));
    let msg = e.to_string();
    assert!(
        msg.contains("http://b:2") && msg.contains("http://a:1"),
        "{msg}"
    );
}

#[test]
fn not_toml_and_unknown_keys_are_syntax_errors_with_the_line() {
    let e = load("name = ").unwrap_err();
    assert!(matches!(e, ScenarioError::Syntax { .. }), "{e:?}");
    let e =
        load("name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"http://h/\"\nthnik = 1").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("thnik") && msg.contains("line 5"), "{msg}");
    let e = Scenario::load(Path::new("/no/such/scenario.toml"), &[]).unwrap_err();
    assert!(e
        .to_string()
        .contains("cannot read scenario /no/such/scenario.toml"));
}

#[test]
fn the_file_model_round_trips_through_toml() {
    let file: file::ScenarioFile = toml::from_str(PORTFOLIO).unwrap();
    let written = toml::to_string(&file).unwrap();
    let again: file::ScenarioFile = toml::from_str(&written).unwrap();
    assert_eq!(file, again);
    assert_eq!(
        file.variables.get("BLOG_ID").map(String::as_str),
        Some("001")
    );
    load(&written).unwrap();
}

#[test]
fn every_example_journey_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/journeys");
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
            loaded += 1;
        }
    }
    assert!(loaded >= 3, "{loaded} journeys in {}", dir.display());
}

#[test]
fn a_scenario_travels_whole_and_compiles_the_same_without_reading_a_path() {
    let dir = std::env::temp_dir().join(format!("loadlab-scenario-src-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/users.csv"), "USER\nann\nbob\ncy\n").unwrap();
    std::fs::write(dir.join("order.json"), br#"{"sku": 7}"#).unwrap();
    let text = r#"
name = "shop"
[variables]
HOST = "127.0.0.1:1"
[[feeders]]
file = "data/users.csv"
[[steps]]
name = "home"
url = "http://{{HOST}}/u/{{USER}}"
[[steps]]
name = "order"
method = "post"
url = "http://{{HOST}}/order"
body.file = "order.json"
"#;
    let overrides = vec![("HOST".to_string(), "127.0.0.1:2".to_string())];
    let here = Scenario::parse(text, &dir, &overrides).unwrap();
    // Both files read, once, by the names the scenario gives them; and the overrides kept.
    let names: Vec<&str> = here.source.files.keys().map(String::as_str).collect();
    assert_eq!(names, ["data/users.csv", "order.json"]);
    assert_eq!(here.source.files["order.json"], br#"{"sku": 7}"#);
    assert_eq!(here.source.overrides, overrides);
    // Elsewhere, with the directory gone: the same scenario, from what travelled alone.
    std::fs::remove_dir_all(&dir).unwrap();
    let there = Scenario::from_source(&here.source).unwrap();
    assert_eq!(format!("{there:?}"), format!("{here:?}"));
    assert_eq!(there.feeders[0].rows.len(), 3);
    // A file that did not travel is named, and no path is tried.
    let mut short = here.source.clone();
    short.files.remove("order.json");
    let e = Scenario::from_source(&short).unwrap_err().to_string();
    assert!(
        e.contains("order.json did not come with the scenario"),
        "{e}"
    );
}

fn steps_text(n: usize, captures: bool) -> String {
    let mut text = String::from("name = \"many\"\nbase_url = \"http://127.0.0.1:1\"\n");
    for i in 0..n {
        text.push_str(&format!("[[steps]]\nname = \"s{i}\"\nurl = \"/{i}\"\n"));
        if captures {
            text.push_str(&format!(
                "[[steps.captures]]\nvar = \"V{i}\"\nheader = \"x-id\"\n"
            ));
        }
    }
    text
}

/// Issue 46 item 4: a scenario of more steps than loadlab runs is refused at load, naming
/// how many it has and how many loadlab takes; as many as it takes load.
#[test]
fn more_steps_than_the_limit_are_refused_with_both_counts() {
    let e = load(&steps_text(MAX_STEPS + 1, false)).unwrap_err();
    assert_eq!((e.item(), e.field()), (Some("scenario"), Some("steps")));
    let text = e.to_string();
    assert!(text.contains("20,001 steps"), "{text}");
    assert!(text.contains("at most 20,000"), "{text}");
    assert!(text.contains("split"), "{text}");
    let s = load(&steps_text(MAX_STEPS, false)).expect("the limit itself loads");
    assert_eq!(s.steps.len(), MAX_STEPS);
}

/// Step names checked for uniqueness and capture variables found by name without searching
/// every earlier one: the limit's worth of steps, each with a capture, loads with every
/// variable in its own slot, in order.
#[test]
fn the_limit_of_steps_with_a_capture_each_loads() {
    let s = load(&steps_text(MAX_STEPS, true)).expect("loads");
    assert_eq!(s.variables.len(), MAX_STEPS);
    assert!(s
        .variables
        .iter()
        .enumerate()
        .all(|(i, v)| v.name == format!("V{i}") && v.slot == Some(i)));
    let dup = steps_text(3, false).replace("name = \"s2\"", "name = \"s0\"");
    let e = load(&dup).unwrap_err();
    assert_eq!((e.item(), e.field()), (Some("step `s0`"), Some("name")));
}
