//! What every importer's output must be, whatever it was given: a file the scenario loader
//! reads as the format (it may still refuse a value, such as a body's file that is not
//! there, or more steps than a scenario takes, as `loadlab import` warns), with step names
//! unique, and a report of what was not carried over whose notes name steps that exist.

use loadlab_import::Imported;
use loadlab_scenario::{Scenario, ScenarioError, ScenarioSource};
use std::collections::HashSet;

pub fn check(imported: &Imported) {
    let steps = &imported.scenario.steps;
    let names: HashSet<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), steps.len(), "step names repeat");
    for note in &imported.notes {
        if let Some(step) = &note.step {
            assert!(
                names.contains(step.as_str()),
                "a note names no step: {note}"
            );
        }
    }
    // No file map: a file the scenario names is refused as not sent, never read from disk.
    let source = ScenarioSource {
        text: imported.toml.clone(),
        ..ScenarioSource::default()
    };
    match Scenario::from_source(&source) {
        Ok(s) => assert_eq!(s.steps.len(), steps.len(), "steps lost on the way"),
        Err(e @ ScenarioError::Syntax { .. }) => {
            panic!(
                "the importer wrote what the format does not describe: {e}\n{}",
                imported.toml
            )
        }
        Err(_) => {}
    }
}
