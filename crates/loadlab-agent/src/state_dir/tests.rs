//! The state dir's tests: locking, modes, nonces across restarts, the record and what a
//! successor reaps (and, from a forged record, does not).

use super::*;
use std::os::unix::fs::PermissionsExt as _;

fn private_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[test]
fn a_second_agent_on_the_same_state_dir_is_refused() {
    let dir = private_dir();
    let (first, reaped) = StateDir::open(dir.path()).unwrap();
    assert!(reaped.is_empty(), "{reaped:?}");
    let err = StateDir::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("another agent is running"), "{err}");
    drop(first);
    assert!(StateDir::open(dir.path()).is_ok());
}

#[test]
fn a_world_writable_state_dir_and_a_readable_key_are_refused() {
    let dir = private_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = StateDir::open(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("written by others") && err.contains("chmod 700"),
        "{err}"
    );
    let key = dir.path().join("key.pem");
    std::fs::write(&key, "k").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = check_owner_and_mode(&key, "the key", true)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("read by others") && err.contains("chmod 600"),
        "{err}"
    );
}

/// A record another user could have forged: the state dir's `run/`, its record and its
/// nonces writable by others are refused at start, naming the `chmod`.
#[test]
fn a_run_dir_record_or_nonces_others_can_write_are_refused() {
    for (path, dir) in [("run", true), ("run/agent.json", false), ("nonces", false)] {
        let root = private_dir();
        drop(StateDir::open(root.path()).unwrap());
        let target = root.path().join(path);
        std::fs::set_permissions(
            &target,
            std::fs::Permissions::from_mode(if dir { 0o777 } else { 0o666 }),
        )
        .unwrap();
        let err = StateDir::open(root.path()).unwrap_err().to_string();
        assert!(
            err.contains(&target.display().to_string()) && err.contains("chmod"),
            "{path}: {err}"
        );
    }
}

/// A forged `run/agent.json` naming a cgroup the agent never makes (another parent,
/// another name) gets nothing in that cgroup killed, and says so. Before the fix, the
/// reaper killed every process of every cgroup the record named.
#[test]
fn a_forged_record_kills_nothing_it_names() {
    let parent = Path::new("/sys/fs/cgroup/pids");
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 || !parent.join("cgroup.procs").exists() {
        println!("SKIPPED: needs root and a cgroup v1 pids hierarchy");
        return;
    }
    let victim_group = parent.join(format!("loadlab-999999-forged-{}", std::process::id()));
    std::fs::create_dir(&victim_group).unwrap();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::write(victim_group.join("cgroup.procs"), victim.id().to_string()).unwrap();
    let root = private_dir();
    std::fs::create_dir(root.path().join("run")).unwrap();
    let forged = Record {
        pid: 999_999,
        instance: String::new(),
        cgroup_parents: vec![parent.to_path_buf()],
        cgroup_prefix: "loadlab-999999-".into(),
        cgroups: vec![victim_group.clone()],
        listening: None,
    };
    std::fs::write(
        root.path().join("run/agent.json"),
        serde_json::to_vec(&forged).unwrap(),
    )
    .unwrap();
    let opened = StateDir::open(root.path());
    let alive = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    let _ = std::fs::remove_dir(&victim_group);
    let (_state, said) = opened.unwrap();
    assert!(
        alive,
        "the reaper killed a process of a cgroup a forged record named"
    );
    assert!(
        said.iter()
            .any(|l| l.contains("ignored the cgroup") && l.contains("nothing in it")),
        "{said:?}"
    );
}

#[test]
fn nonces_outlive_the_agent_and_the_log_is_compacted() {
    let dir = private_dir();
    let (state, _) = StateDir::open(dir.path()).unwrap();
    for i in 0..10u8 {
        state.append_nonce(&[i; 16]);
    }
    drop(state);
    let (state, _) = StateDir::open(dir.path()).unwrap();
    let kept = state.load_nonces(4);
    assert_eq!(kept, vec![[6; 16], [7; 16], [8; 16], [9; 16]]);
    // 10 > 2 * 4: compacted to the 4 kept.
    assert_eq!(
        std::fs::metadata(dir.path().join("nonces")).unwrap().len(),
        64
    );
}

#[test]
fn the_address_is_recorded_once_listening_and_not_kept_for_a_successor() {
    let dir = private_dir();
    let record = |dir: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("run/agent.json")).unwrap()).unwrap()
    };
    let (state, _) = StateDir::open(dir.path()).unwrap();
    assert!(record(dir.path()).get("listening").is_none());
    state
        .note_listening(Listening {
            url: "https://10.0.0.11:7070".into(),
            fingerprint: "sha256:00".into(),
            token_file: dir.path().join("token"),
            generator: true,
        })
        .unwrap();
    let r = record(dir.path());
    assert_eq!(r["pid"], std::process::id());
    assert_eq!(r["listening"]["url"], "https://10.0.0.11:7070");
    assert_eq!(r["listening"]["generator"], true);
    drop(state);
    // A dead agent's address must not pass for its successor's before it listens.
    let (_state, _) = StateDir::open(dir.path()).unwrap();
    assert!(record(dir.path()).get("listening").is_none());
}

#[test]
fn key_material_left_in_run_is_removed_at_start() {
    let dir = private_dir();
    let (state, _) = StateDir::open(dir.path()).unwrap();
    let certs = loadlab_certs::CertDir::create_in(&state.run_dir(), &[]).unwrap();
    let key = certs.key_path();
    // SIGKILL: no destructor runs.
    std::mem::forget(certs);
    drop(state);
    assert!(key.exists());
    let (_state, reaped) = StateDir::open(dir.path()).unwrap();
    assert!(!key.exists());
    assert!(
        reaped.iter().any(|l| l.contains("certificate and key")),
        "{reaped:?}"
    );
}
