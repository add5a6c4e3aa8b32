//! The human summary, snapshot-tested on results saved from real runs (which also checks that
//! saved results still load).

use loadlab_engine::RunResult;
use loadlab_report::{render, TextExporter};

fn fixture(name: &str) -> RunResult {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

#[test]
fn summary_of_a_healthy_run() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("ok.json")));
}

#[test]
fn summary_of_a_run_where_everything_failed() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("refused.json")));
}
