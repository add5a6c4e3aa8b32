//! libFuzzer target for the scenario file (`loadlab_scenario::Scenario::from_source`): TOML
//! text compiled with no files given, so nothing is read from disk (a feeder or a body file
//! is refused as not sent). Whatever the text, nothing may panic; a scenario that compiles
//! has between one and `MAX_STEPS` steps of unique names, each with a request and a finite
//! weight in (0, 1], compiles again the same from the source it carries, and encodes every
//! request with its starting values.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loadlab_scenario::{Scenario, ScenarioSource, MAX_STEPS};
use std::collections::HashSet;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let source = ScenarioSource {
        text: text.to_string(),
        ..ScenarioSource::default()
    };
    let Ok(s) = Scenario::from_source(&source) else {
        return;
    };
    assert!((1..=MAX_STEPS).contains(&s.steps.len()));
    let names: HashSet<&str> = s.steps.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(names.len(), s.steps.len(), "step names repeat");
    for step in &s.steps {
        assert!(
            !step.requests.is_empty(),
            "step {} has no request",
            step.name
        );
        assert!(
            step.weight.is_finite() && step.weight > 0.0 && step.weight <= 1.0,
            "step {} weighs {}",
            step.name,
            step.weight
        );
        let mut out = Vec::new();
        for r in &step.requests {
            r.encode(&s.initial_values, Some("a=b"), false, &mut out);
            assert!(
                out.starts_with(r.method.as_bytes()),
                "{:?}",
                String::from_utf8_lossy(&out)
            );
        }
    }
    assert!(s.requests_per_iteration().is_finite());
    let again = Scenario::from_source(&s.source).expect("a compiled scenario's source compiles");
    let names_again: Vec<&str> = again.steps.iter().map(|st| st.name.as_str()).collect();
    let names: Vec<&str> = s.steps.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(names_again, names);
});
