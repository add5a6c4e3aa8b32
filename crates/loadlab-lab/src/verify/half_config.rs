//! The contract's configuration rule for TLS: `TLS_CERT` without `TLS_KEY` (or the other way
//! round) is a mistake, reported on stderr naming both variables, with exit status 2, never
//! a server quietly started over plain HTTP. Each half is tried in a process of its own; a
//! process still running after the start-up timeout is killed (its whole process group) and
//! reported.

use super::{Check, Outcome};
use crate::lab::Lab;
use crate::serve::ServeOptions;
use std::io::{Read, Seek};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// One check per half: `TLS_CERT` alone, then `TLS_KEY` alone.
pub(super) fn checks(
    lab: &Lab,
    name: &str,
    serve: &ServeOptions,
    (cert, key): (PathBuf, PathBuf),
) -> Vec<Check> {
    [("TLS_CERT", cert), ("TLS_KEY", key)]
        .into_iter()
        .map(|(set, path)| Check {
            endpoint: format!("process ({set} without the other)"),
            what: "exit status 2, stderr naming TLS_CERT and TLS_KEY".into(),
            outcome: one_half(lab, name, serve, set, &path),
        })
        .collect()
}

fn one_half(lab: &Lab, name: &str, serve: &ServeOptions, set: &str, path: &Path) -> Outcome {
    let expected = "exit status 2 and a message naming TLS_CERT and TLS_KEY on stderr".to_string();
    let fail = |got: String| Outcome::Fail {
        expected: expected.clone(),
        got,
    };
    let plain = ServeOptions {
        tls: None,
        ..serve.clone()
    };
    let mut command = match lab.command(name, &plain) {
        Ok(command) => command,
        Err(e) => return fail(format!("cannot make its command: {e}")),
    };
    let stderr = match tempfile::tempfile() {
        Ok(file) => file,
        Err(e) => return fail(format!("cannot make a file for its stderr: {e}")),
    };
    let stderr_for_child = match stderr.try_clone() {
        Ok(file) => file,
        Err(e) => return fail(format!("cannot make a file for its stderr: {e}")),
    };
    command
        .env(set, path)
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr_for_child))
        // Its own process group, so that a server that started anyway goes with all its
        // workers.
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return fail(format!("cannot start it: {e}")),
    };
    let deadline = Instant::now() + serve.ready_timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => break None,
        }
    };
    let Some(status) = status else {
        // SAFETY: kill(2) on the process group this function created; no memory involved.
        unsafe {
            libc::kill(-(child.id() as i32), libc::SIGKILL);
        }
        let _ = child.wait();
        return fail(format!(
            "still running after {:?}: it ignored {set} set alone (and was killed)",
            serve.ready_timeout
        ));
    };
    let mut text = String::new();
    let mut stderr = stderr;
    let _ = stderr.rewind();
    let _ = stderr.take(64 * 1024).read_to_string(&mut text);
    let first_line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string();
    if status.code() != Some(2) {
        return fail(format!("{status}; stderr: {first_line:?}"));
    }
    if !(text.contains("TLS_CERT") && text.contains("TLS_KEY")) {
        return fail(format!(
            "exit status 2, but stderr does not name both: {first_line:?}"
        ));
    }
    Outcome::Pass
}
