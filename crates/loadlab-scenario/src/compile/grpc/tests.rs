//! gRPC steps as this crate checks them: the call's fields compiled (a templated message,
//! metadata, a deadline, `grpc_status` checks), and every field that does not fit a call, or
//! a call that has no schema or no host, refused naming the step and the field.

use crate::check::{judge_call, Check, Verdict};
use crate::{Response, Scenario};
use std::path::Path;

const HEAD: &str = "name = \"s\"\nbase_url = \"http://127.0.0.1:50051\"\n\
                    [variables]\nWHO = \"ann\"\n[grpc]\nproto = [\"shop.proto\"]\n";

fn load(steps: &str) -> Result<Scenario, String> {
    Scenario::from_toml_str(&format!("{HEAD}{steps}"), Path::new("/protos"))
        .map_err(|e| e.to_string())
}

#[test]
fn a_call_compiles_with_its_message_metadata_deadline_and_status_check() {
    let s = load(
        "[[steps]]\nname = \"a\"\ngrpc = \"/t.v1.Shop/Get\"\n\
         message = { name = \"{{WHO}}\", tags = [\"x\"] }\n\
         metadata = { X-Who = \"{{WHO}}\" }\ndeadline = \"200ms\"\n\
         [[steps.checks]]\ngrpc_status = [\"ok\", 5]\n\
         [[steps.captures]]\nvar = \"T\"\nheader = \"x-token\"",
    )
    .unwrap();
    let step = &s.steps[0];
    let g = step.grpc.as_ref().unwrap();
    assert_eq!(g.method, "t.v1.Shop/Get");
    assert_eq!(
        String::from_utf8(g.messages[0].constant_bytes()).unwrap(),
        r#"{"name":"ann","tags":["x"]}"#
    );
    assert_eq!(g.metadata[0].0, "x-who");
    assert_eq!(g.deadline, Some(std::time::Duration::from_millis(200)));
    assert_eq!(step.checks, [Check::GrpcStatus(vec![0, 5])]);
    assert_eq!(step.describe(), "gRPC t.v1.Shop/Get");
    assert!(s.has_grpc());
    assert_eq!(
        s.grpc,
        Some(crate::grpc::GrpcSchema::Protos {
            protos: vec![Path::new("/protos/shop.proto").to_path_buf()],
            import_paths: vec![],
        })
    );
    assert_eq!(s.origin.url(), "http://127.0.0.1:50051");
}

#[test]
fn a_status_check_decides_and_without_one_a_code_is_its_class() {
    let r = Response {
        status: 200,
        headers: &[],
        body: b"{}",
    };
    let expect = [Check::GrpcStatus(vec![5])];
    assert_eq!(
        judge_call(&expect, &[], &r, Some(5), &mut []),
        Verdict::Pass
    );
    assert_eq!(
        judge_call(&expect, &[], &r, Some(0), &mut []),
        Verdict::CheckFailed {
            index: 0,
            message: "grpc_status NOT_FOUND expected, got OK".into()
        }
    );
    assert_eq!(
        judge_call(&[], &[], &r, Some(14), &mut []),
        Verdict::BadGrpcStatus(14)
    );
    assert_eq!(judge_call(&[], &[], &r, Some(0), &mut []), Verdict::Pass);
}

#[test]
fn what_a_call_cannot_take_is_refused_with_the_fix() {
    let step = |extra: &str| format!("[[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"\n{extra}");
    for (steps, words) in [
        (
            step("url = \"/x\""),
            &["step `a`: url:", "its path is its method"][..],
        ),
        (
            step("method = \"GET\""),
            &["method:", "every gRPC call is a POST"],
        ),
        (step("headers = { a = \"b\" }"), &["headers:", "metadata"]),
        (step("body.raw = \"x\""), &["body:", "`message`"]),
        (
            step("message = 1979-05-27"),
            &["message:", "not a message", "message = 5"],
        ),
        (
            step("message = []"),
            &["message:", "a list of 0 messages", "1 to 10000"],
        ),
        (
            step("message = [{}, [1]]"),
            &["message[1]:", "not a message"],
        ),
        (
            step("message = { a = \"{{NOPE}}\" }"),
            &["message", "unknown variable `{{NOPE}}`"],
        ),
        (step("deadline = \"soon\""), &["deadline:"]),
        (
            step("metadata = { \"a b\" = \"c\" }"),
            &["metadata.a b", "not a metadata key"],
        ),
        (
            step("[[steps.checks]]\nstatus = 200"),
            &["checks[0].status", "grpc_status = \"OK\""],
        ),
        (
            step("[[steps.checks]]\ngrpc_status = \"NOPE\""),
            &["not a gRPC status", "NOT_FOUND"],
        ),
        (
            step("[[steps.checks]]\ngrpc_status = []"),
            &["an empty list"],
        ),
        (
            step("[[steps.captures]]\nvar = \"C\"\ncookie = \"s\""),
            &["sets no cookies"],
        ),
        (
            "[[steps]]\nname = \"a\"\ngrpc = \"Get\"".into(),
            &["grpc:", "not SERVICE/METHOD"],
        ),
        (
            "[[steps]]\nname = \"h\"\nurl = \"/\"\nmessage = { a = 1 }".into(),
            &["step `h`: message:", "only a gRPC step takes it"],
        ),
        (
            "[[steps]]\nname = \"h\"\nurl = \"/\"\n[[steps.checks]]\ngrpc_status = \"OK\"".into(),
            &["checks[0].grpc_status", "only a gRPC step"],
        ),
        (
            "[[steps]]\nname = \"h\"\nurl = \"/\"".into(),
            &["[grpc]", "no step is a gRPC call"],
        ),
    ] {
        let err = load(&steps).expect_err(&steps);
        for w in words {
            assert!(err.contains(w), "`{w}` not in: {err}");
        }
    }
}

#[test]
fn a_call_needs_a_schema_and_a_host() {
    let no_schema = "name = \"s\"\nbase_url = \"http://h:1\"\n\
                     [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"";
    let err = Scenario::from_toml_str(no_schema, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("needs the service's schema") && err.contains("[grpc]"),
        "{err}"
    );
    let no_host = "name = \"s\"\n[grpc]\nreflect = true\n\
                   [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"";
    let err = Scenario::from_toml_str(no_host, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(err.contains("set base_url"), "{err}");
    let both = "name = \"s\"\nbase_url = \"http://h:1\"\n[grpc]\nreflect = true\nproto = [\"a\"]\n\
                [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"";
    let err = Scenario::from_toml_str(both, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(err.contains("keep one"), "{err}");
    let other_host = "name = \"s\"\nbase_url = \"http://h:1\"\n[grpc]\nreflect = true\n\
                      [[steps]]\nname = \"a\"\ngrpc = \"t.v1.Shop/Get\"\n\
                      [[steps]]\nname = \"b\"\nurl = \"http://other:2/\"";
    let err = Scenario::from_toml_str(other_host, Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(err.contains("one host"), "{err}");
}
