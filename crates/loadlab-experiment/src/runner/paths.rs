//! The fleet's path check for an experiment (issue 52, docs/path.md): over `[load]
//! generators` with the server's agent, each generator's path to the server's host is
//! measured both ways once, before the first run (every run has a session of its own, and
//! checking before each would cost seconds a run and load the paths between runs). What it
//! found goes on every run's result (`path_check`, a verdict per path named), so that the
//! comparisons name a path that would set the figures.

use super::Event;
use loadlab_result::path::check::describe;
use loadlab_result::path::PathCheck;
use loadlab_session::fleet::Fleet;
use loadlab_session::Session;

/// The check, made at the first session whose server has an agent, kept for the others.
#[derive(Default)]
pub(super) struct Once {
    found: Option<PathCheck>,
}

impl Once {
    /// Checks the paths on `session` the first time (saying what it found), then puts the
    /// same findings on every later session.
    pub fn apply(&mut self, session: &mut Session, fleet: &Fleet, on_event: &mut dyn FnMut(Event)) {
        if let Some(found) = &self.found {
            session.set_path_check(found.clone());
            return;
        }
        let Some(check) = session.check_paths(fleet).cloned() else {
            return;
        };
        for line in words(&check) {
            on_event(Event::Note(line));
        }
        self.found = Some(check);
    }
}

/// The check in words: each path, then each path named, as `loadlab run` says them.
fn words(check: &PathCheck) -> Vec<String> {
    if let Some(e) = &check.error {
        return vec![format!("the paths to the generators were not checked: {e}")];
    }
    let mut out = vec![
        "the paths from the server's host to the generators, measured both \
                        ways before the first run:"
            .to_string(),
    ];
    out.extend(
        check
            .generators
            .iter()
            .map(|f| format!("  {}", describe(f))),
    );
    out.extend(check.named().map(|why| format!("warning: {why}")));
    out
}
