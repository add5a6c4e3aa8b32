//! `steps::prepare` on real `.proto` files: each bad step refused before the run, naming
//! the step, the field and the fix; a good one's message framed once when it is constant;
//! an answer read back as JSON with the .proto's names.

use super::*;
use std::path::Path;

const SHOP: &str = r#"
syntax = "proto3";
package t.v1;
service Shop {
  rpc Get(Who) returns (Token);
  rpc Watch(Who) returns (stream Token);
}
message Who { string name = 1; int32 age = 2; }
message Token { string user_id = 1; repeated Who who = 2; map<string, Who> friends = 3; }
"#;

/// A scenario in a folder of its own holding `shop.proto`; the folder is removed at once
/// (the schema is compiled by `prepare`, called before).
fn prepared(name: &str, steps: &str, vars: &str) -> Result<Vec<Option<Arc<StepCall>>>, String> {
    let dir = std::env::temp_dir().join(format!("loadlab-steps-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("shop.proto"), SHOP).unwrap();
    let text = format!(
        "name = \"s\"\nbase_url = \"http://127.0.0.1:1\"\n[variables]\n{vars}\n\
         [grpc]\nproto = [\"shop.proto\"]\n{steps}"
    );
    let scenario = Scenario::from_toml_str(&text, &dir);
    let out = scenario
        .map_err(|e| e.to_string())
        .and_then(|s| prepare(&s, Duration::from_secs(20), None));
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn refused(name: &str, steps: &str) -> String {
    prepared(name, steps, "").expect_err("refused")
}

#[test]
fn a_constant_message_is_framed_once_and_a_templated_one_per_call() {
    let calls = prepared(
        "good",
        "[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"\nmessage = { name = \"ann\" }\n\
         [[steps]]\nname = \"h\"\nurl = \"/\"\n\
         [[steps.captures]]\nvar = \"N\"\nheader = \"x\"\n\
         [[steps]]\nname = \"b\"\ngrpc = \"t.v1.Shop/Get\"\nmessage = { age = \"{{N}}\" }\n\
         [[steps.captures]]\nvar = \"F\"\njson = \"$.friends['x'].name\"\n\
         [[steps.checks]]\njson = \"$.who[0].age\"",
        "N = \"3\"",
    )
    .unwrap();
    assert!(calls[1].is_none(), "an HTTP step has no call");
    let a = calls[0].as_ref().unwrap();
    let framed = a.constant.as_ref().expect("a constant message");
    assert_eq!(&framed[..], &[0, 0, 0, 0, 5, 0x0a, 3, b'a', b'n', b'n']);
    assert_eq!(a.path, "/t.v1.Shop/Get");
    let b = calls[2].as_ref().unwrap();
    assert!(b.constant.is_none());
    // A captured value that fits the field, and one that does not.
    assert_eq!(
        &b.message(br#"{"age":"42"}"#).unwrap()[..],
        &[0, 0, 0, 0, 2, 0x10, 42]
    );
    let why = b.message(br#"{"age":"x"}"#).unwrap_err();
    assert!(
        why.contains("t.v1.Who") && why.contains("once its variables"),
        "{why}"
    );
    // The answer as JSON: the .proto's names, defaults written.
    let mut json = Vec::new();
    b.answer_json(&[0, 0, 0, 0, 3, 0x0a, 1, b'u'], &mut json)
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["user_id"], "u");
    assert_eq!(v["who"], serde_json::json!([]));
    let why = b
        .answer_json(&[0, 0, 0, 0, 2, 0xff, 0xff], &mut json)
        .unwrap_err();
    assert!(why.contains("does not decode as t.v1.Token"), "{why}");
}

#[test]
fn bad_steps_are_refused_naming_the_step_and_the_fix() {
    let step = |extra: &str| format!("[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"\n{extra}");
    for (name, steps, words) in [
        (
            "method",
            "[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Put\"".to_string(),
            &["step `a`: grpc:", "no method `Put`", "Get, Watch"][..],
        ),
        (
            "service",
            "[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Nope/Get\"".to_string(),
            &["no service `t.v1.Nope`", "t.v1.Shop"],
        ),
        (
            "stream",
            "[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Watch\"\nmessage = [{}, {}]".to_string(),
            &[
                "step `a`: message:",
                "server streaming",
                "one message",
                "not a list of 2",
            ],
        ),
        (
            "answer",
            step("answer_index = 1"),
            &["step `a`: answer_index:", "unary", "one answer"],
        ),
        (
            "item",
            "[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Watch\"\nmessage = [{ nme = 1 }]"
                .to_string(),
            &["step `a`: message:", "nme"],
        ),
        (
            "field",
            step("message = { nme = \"x\" }"),
            &["step `a`: message:", "t.v1.Who", "nme"],
        ),
        (
            "type",
            step("message = { age = \"old\" }"),
            &["step `a`: message:", "t.v1.Who"],
        ),
        (
            "capture",
            step("[[steps.captures]]\nvar = \"T\"\njson = \"$.token\""),
            &[
                "captures[0].json",
                "t.v1.Token has no field `token`",
                "user_id, who, friends",
            ],
        ),
        (
            "jsonname",
            step("[[steps.captures]]\nvar = \"T\"\njson = \"$.userId\""),
            &["JSON name of field `user_id`", "write $.user_id"],
        ),
        (
            "index",
            step("[[steps.checks]]\njson = \"$.user_id[0]\""),
            &["checks[0].json", "index [0] goes into a single value"],
        ),
        (
            "list",
            step("[[steps.checks]]\njson = \"$.who.name\""),
            &["key `name` goes into a list (take an element with [0])"],
        ),
        (
            "reserved",
            step("metadata = { te = \"x\" }"),
            &["metadata.te", "set by the call itself"],
        ),
        (
            "deadline",
            step("deadline = \"1m\""),
            &["step `a`: deadline:", "longer than --timeout"],
        ),
    ] {
        let err = refused(name, &steps);
        for w in words {
            assert!(err.contains(w), "{name}: `{w}` not in: {err}");
        }
    }
}

#[test]
fn a_missing_proto_names_the_file() {
    let text = "name = \"s\"\nbase_url = \"http://h:1\"\n[grpc]\nproto = [\"gone.proto\"]\n\
                [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"";
    let s = Scenario::from_toml_str(text, Path::new("/nonexistent-loadlab")).unwrap();
    let err = prepare(&s, Duration::from_secs(1), None).unwrap_err();
    assert!(
        err.contains("[grpc]") && err.contains("gone.proto"),
        "{err}"
    );
    let reflect = "name = \"s\"\nbase_url = \"http://h:1\"\n[grpc]\nreflect = true\n\
                   [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"";
    let s = Scenario::from_toml_str(reflect, Path::new(".")).unwrap();
    let err = prepare(&s, Duration::from_secs(1), None).unwrap_err();
    assert!(err.contains("needs the server's address"), "{err}");
}
