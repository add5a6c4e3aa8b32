//! Manifests, build caching and start-up failures, on small fake targets in a temporary lab
//! (shell commands instead of compilers, so these run in milliseconds), plus the real lab's
//! manifests.

use super::support::{targets_dir, OTHER_TARGETS, RUST_TARGETS};
use loadlab_lab::{BuildAction, BuildState, Lab, LabError, ServeOptions};
use std::fs;
use std::path::Path;
use std::time::Duration;

/// A target whose "build" copies its source to an artifact and logs each run.
fn fake_target(lab: &Path, name: &str, toolchain: &str, run: &str) {
    fake_target_built_by(
        lab,
        name,
        toolchain,
        "echo run >> builds.log && mkdir -p out && cp src/main.txt out/artifact",
        "out/artifact",
        run,
    );
}

/// A fake target whose build is the shell command `build`, leaving `artifact`.
fn fake_target_built_by(
    lab: &Path,
    name: &str,
    toolchain: &str,
    build: &str,
    artifact: &str,
    run: &str,
) {
    let dir = lab.join(name);
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/main.txt"), "v1").unwrap();
    fs::write(
        dir.join("target.toml"),
        format!(
            r#"
name = "{name}"
language = "shell"
framework = "none"
framework_version = "0"
toolchain = [{toolchain}]
toolchain_install = "apt-get install {name}-toolchain"
sources = ["src"]
warmup_secs = 1
[build]
command = ["sh", "-c", {build:?}]
artifacts = [{artifact:?}]
[run]
command = ["sh", "-c", {run:?}]
"#
        ),
    )
    .unwrap();
}

fn builds_logged(lab: &Path, name: &str) -> usize {
    fs::read_to_string(lab.join(name).join("builds.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn builds_are_cached_until_a_source_changes() {
    let tmp = tempfile::tempdir().unwrap();
    fake_target(tmp.path(), "fake", "\"sh\"", "exit 0");
    let lab = Lab::open(tmp.path()).unwrap();
    let target = lab.target("fake").unwrap().clone();
    assert_eq!(lab.state(&target).unwrap(), BuildState::NotBuilt);

    assert_eq!(
        lab.build(&target, false).unwrap().action,
        BuildAction::Built
    );
    assert_eq!(lab.state(&target).unwrap(), BuildState::Built);
    assert_eq!(
        lab.build(&target, false).unwrap().action,
        BuildAction::Cached
    );
    assert_eq!(builds_logged(tmp.path(), "fake"), 1);

    fs::write(tmp.path().join("fake/src/main.txt"), "v2").unwrap();
    assert_eq!(lab.state(&target).unwrap(), BuildState::Stale);
    assert_eq!(
        lab.build(&target, false).unwrap().action,
        BuildAction::Built
    );
    assert_eq!(
        fs::read_to_string(tmp.path().join("fake/out/artifact")).unwrap(),
        "v2"
    );
    assert_eq!(lab.build(&target, true).unwrap().action, BuildAction::Built);
    assert_eq!(builds_logged(tmp.path(), "fake"), 3);

    fs::remove_file(tmp.path().join("fake/out/artifact")).unwrap();
    assert_eq!(lab.state(&target).unwrap(), BuildState::NotBuilt);
    assert_eq!(
        lab.build(&target, false).unwrap().action,
        BuildAction::Built
    );
}

#[test]
fn two_builds_of_one_target_at_once_run_its_build_once() {
    let tmp = tempfile::tempdir().unwrap();
    // A build that fails if another is running in the same directory (`mkdir` is atomic).
    fake_target_built_by(
        tmp.path(),
        "once",
        "\"sh\"",
        "mkdir busy || exit 7; sleep 0.3; echo run >> builds.log; mkdir -p out; \
         cp src/main.txt out/artifact; rmdir busy",
        "out/artifact",
        "exit 0",
    );
    let actions: Vec<BuildAction> = std::thread::scope(|scope| {
        let builds: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    // Each its own Lab, as two processes would have.
                    let lab = Lab::open(tmp.path()).unwrap();
                    let target = lab.target("once").unwrap().clone();
                    lab.build(&target, false).unwrap().action
                })
            })
            .collect();
        builds.into_iter().map(|b| b.join().unwrap()).collect()
    });
    let mut sorted = actions.clone();
    sorted.sort_by_key(|a| *a == BuildAction::Cached);
    assert_eq!(
        sorted,
        [BuildAction::Built, BuildAction::Cached],
        "{actions:?}"
    );
    assert_eq!(builds_logged(tmp.path(), "once"), 1);
}

#[test]
fn a_missing_toolchain_is_a_state_and_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    fake_target(
        tmp.path(),
        "needs-zig",
        "\"no-such-toolchain-xyz\"",
        "exit 0",
    );
    let lab = Lab::open(tmp.path()).unwrap();
    let rows = lab.list().unwrap();
    assert_eq!(
        rows[0].state,
        BuildState::ToolchainMissing(vec!["no-such-toolchain-xyz".into()])
    );
    let err = lab.build_named("needs-zig", false).unwrap_err();
    assert!(matches!(err, LabError::ToolchainMissing { .. }));
    assert!(
        err.to_string().contains("no-such-toolchain-xyz on PATH"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("install it (`apt-get install needs-zig-toolchain`)"),
        "{err}"
    );
}

#[test]
fn a_failing_build_and_an_unknown_name_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    fake_target(tmp.path(), "fails", "", "exit 0");
    let manifest = tmp.path().join("fails/target.toml");
    let text = fs::read_to_string(&manifest).unwrap();
    let broken = text.replace("echo run >> builds.log", "exit 3");
    fs::write(&manifest, broken).unwrap();
    let lab = Lab::open(tmp.path()).unwrap();
    let err = lab.build_named("fails", false).unwrap_err();
    assert!(matches!(err, LabError::BuildFailed { .. }), "{err}");

    let err = lab.build_named("nope", false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no target named \"nope\"; known targets: fails (see `loadlab lab list`)"
    );
}

#[test]
fn a_manifest_must_match_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fake_target(tmp.path(), "one", "", "exit 0");
    fs::rename(tmp.path().join("one"), tmp.path().join("two")).unwrap();
    let err = Lab::open(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("make them equal"), "{err}");
}

#[test]
fn serve_refuses_unbuilt_targets_and_reports_a_crash_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    fake_target(
        tmp.path(),
        "crashes",
        "",
        "echo 'bad config: PORT' >&2; exit 2",
    );
    fake_target(tmp.path(), "mumbles", "", "echo hello; exec sleep 30");
    let lab = Lab::open(tmp.path()).unwrap();
    let options = ServeOptions {
        ready_timeout: Duration::from_secs(10),
        ..ServeOptions::default()
    };
    let err = lab.serve("crashes", &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "target crashes is not built: run `loadlab lab build crashes`"
    );

    lab.build_named("all", false).unwrap();
    let err = lab.serve("crashes", &options).unwrap_err().to_string();
    assert!(
        err.contains("exited (exit status 2) before printing"),
        "{err}"
    );
    assert!(err.contains("bad config: PORT"), "{err}");
    let err = lab.serve("mumbles", &options).unwrap_err().to_string();
    assert!(err.contains("got \"hello\""), "{err}");
}

#[test]
fn the_repository_lab_lists_every_reference_target() {
    let lab = Lab::open(&targets_dir()).unwrap();
    let rows = lab.list().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    for name in RUST_TARGETS.into_iter().chain(OTHER_TARGETS) {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for row in rows.iter().filter(|r| r.name.starts_with("rust-")) {
        assert_eq!(row.language, "rust");
        assert!(!row.framework_version.is_empty());
    }
    for name in OTHER_TARGETS {
        let target = lab.target(name).unwrap();
        assert!(
            !target.manifest.toolchain.is_empty() && !target.manifest.toolchain_install.is_empty(),
            "{name}: a target outside the Rust workspace names its toolchain and how to install it"
        );
        assert!(!target.manifest.build.artifacts.is_empty(), "{name}");
    }
    // Post 001's stacks the lab cannot hold are listed too, with what they need, as a
    // missing toolchain is; its Cowboy is a target (from Debian's rabbitmq-server package).
    for name in ["elixir-trot", "elixir-phoenix"] {
        let row = rows.iter().find(|r| r.name == name).expect(name);
        match &row.state {
            BuildState::Unavailable(why) => assert!(why.contains("Hex"), "{name}: {why}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(lab.target(name).is_err(), "{name} is not a target");
    }
    let cowboy = rows.iter().find(|r| r.name == "erlang-cowboy").unwrap();
    assert!(
        !matches!(cowboy.state, BuildState::Unavailable(_)),
        "{cowboy:?}"
    );
    let found = Lab::discover(&targets_dir().join("rust-axum/src")).unwrap();
    assert_eq!(found.root(), lab.root());
}

#[cfg(target_os = "linux")]
#[test]
fn serve_pins_the_target_to_the_cpus_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    // A "target" that reports the CPUs it may use on its address line, then exits.
    fake_target(
        tmp.path(),
        "pinned",
        "",
        "echo \"listening on $(grep Cpus_allowed_list /proc/self/status | tr -d ' \\t')\"",
    );
    let lab = Lab::open(tmp.path()).unwrap();
    lab.build_named("all", false).unwrap();
    // A CPU this process may use (a CI container's cpuset need not include CPU 0).
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let cpu: usize = allowed
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let options = ServeOptions {
        cpus: Some(vec![cpu]),
        ready_timeout: Duration::from_secs(10),
        ..ServeOptions::default()
    };
    // The line is not an address, so start-up fails, and the message shows what it printed.
    let err = lab.serve("pinned", &options).unwrap_err().to_string();
    assert!(err.contains(&format!("Cpus_allowed_list:{cpu}\"")), "{err}");
}

/// A target's build sees neither the variables cargo sets for the test that asked for it
/// (a dependency whose build script watches `CARGO_MANIFEST_DIR`, as ring does, would be
/// compiled again for each crate whose tests build the same target) nor the wrapper loadlab's
/// own build used; what it needs from the environment (PATH, CARGO_HOME) it keeps.
#[test]
fn a_build_does_not_inherit_the_variables_of_the_test_that_started_it() {
    for set_by_cargo in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PKG_VERSION"] {
        assert!(
            std::env::var_os(set_by_cargo).is_some(),
            "{set_by_cargo} is not set: run this test with cargo test"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    fake_target_built_by(
        tmp.path(),
        "envprobe",
        "\"sh\"",
        "env > seen.env",
        "seen.env",
        "exit 0",
    );
    let dir = tmp.path().join("envprobe");
    let lab = Lab::open(tmp.path()).unwrap();
    let target = lab.target("envprobe").unwrap().clone();
    lab.build(&target, false).unwrap();
    let seen = fs::read_to_string(dir.join("seen.env")).unwrap();
    let names: Vec<&str> = seen
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    for name in &names {
        assert!(
            !(name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_MANIFEST_")
                || name.starts_with("CARGO_CRATE_")
                || name.starts_with("CARGO_BIN_")
                || [
                    "CARGO_TARGET_DIR",
                    "RUSTC_WORKSPACE_WRAPPER",
                    "CLIPPY_ARGS",
                    "OUT_DIR"
                ]
                .contains(name)),
            "the build inherited {name}"
        );
    }
    assert!(names.contains(&"PATH"), "the build lost PATH: {names:?}");
}
