//! WebSocket steps as this crate checks them: a /path on the base URL or a ws:// or wss://
//! URL on the scenario's host, templated messages and header fields, what answers a message;
//! and every field that does not fit a WebSocket step refused, naming the step and the field.

use crate::ws::WsAnswer;
use crate::Scenario;
use std::path::Path;

fn load(steps: &str) -> Result<Scenario, String> {
    let text = format!(
        "name = \"s\"\nbase_url = \"https://127.0.0.1:8443/api\"\n[variables]\nWHO = \"ann\"\n{steps}"
    );
    Scenario::from_toml_str(&text, Path::new(".")).map_err(|e| e.to_string())
}

#[test]
fn a_websocket_step_compiles_its_url_messages_and_answer() {
    let s = load(
        "[[steps]]\nname = \"a\"\nws = \"/chat?u={{WHO}}\"\nheaders = { Origin = \"x\" }\n\
         messages = [\"hi {{WHO}}\", \"bye\"]\nanswer = \"next\"\nbinary = true\n\
         [[steps]]\nname = \"b\"\nws = \"wss://127.0.0.1:8443/b\"\nmessages = [\"x\"]",
    )
    .unwrap();
    let a = &s.steps[0];
    let w = a.ws.as_ref().unwrap();
    assert!(w.secure && w.binary);
    assert_eq!(w.answer, WsAnswer::Next);
    assert_eq!(
        String::from_utf8(w.target.constant_bytes()).unwrap(),
        "/api/chat?u=ann"
    );
    assert_eq!(
        String::from_utf8(w.messages[0].constant_bytes()).unwrap(),
        "hi ann"
    );
    assert_eq!(w.headers[0].0, "Origin");
    assert_eq!(a.requests.len(), 2, "each message counts as a request");
    assert_eq!(a.describe(), "WebSocket /chat?u={{WHO}} (2 messages)");
    assert_eq!(s.steps[1].ws.as_ref().unwrap().answer, WsAnswer::Echo);
    assert!(s.has_ws() && s.is_constant());
    assert_eq!(s.requests_per_iteration(), 3.0);
}

#[test]
fn what_a_websocket_step_cannot_take_is_refused_with_the_fix() {
    let step = |extra: &str| format!("[[steps]]\nname = \"a\"\nws = \"/\"\n{extra}");
    for (steps, words) in [
        (step(""), &["messages:", "0 messages; give 1 to"][..]),
        (
            step("messages = [\"x\"]\nurl = \"/\""),
            &["url:", "its URL is `ws`"],
        ),
        (
            step("messages = [\"x\"]\nbody.raw = \"x\""),
            &["body:", "`messages`"],
        ),
        (
            step("messages = [\"x\"]\nanswer = \"any\""),
            &["answer:", "\"echo\"", "\"next\""],
        ),
        (
            step("messages = [\"x\"]\nheaders = { Sec-WebSocket-Key = \"k\" }"),
            &["written by the WebSocket upgrade itself"],
        ),
        (
            step("messages = [\"x\"]\n[[steps.checks]]\nstatus = 101"),
            &["checks[0].status", "body_contains or json"],
        ),
        (
            step("messages = [\"x\"]\n[[steps.captures]]\nvar = \"V\"\nheader = \"x\""),
            &["captures[0]", "last answer"],
        ),
        (
            step("messages = [\"{{NOPE}}\"]"),
            &["messages[0]", "unknown variable"],
        ),
        (
            "[[steps]]\nname = \"h\"\nurl = \"/\"\n\
             [[steps]]\nname = \"a\"\nws = \"ws://other:1/\"\nmessages = [\"x\"]"
                .into(),
            &["one host"],
        ),
        (
            "[[steps]]\nname = \"h\"\nurl = \"/\"\nmessages = [\"x\"]".into(),
            &["step `h`: messages:", "only a WebSocket step"],
        ),
        (
            "[[steps]]\nname = \"g\"\ngrpc = \"a.B/C\"\nws = \"/\"".into(),
            &["not both"],
        ),
    ] {
        let err = load(&steps).expect_err(&steps);
        for w in words {
            assert!(err.contains(w), "`{w}` not in: {err}");
        }
    }
}
