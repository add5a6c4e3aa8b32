//! The FROM scratch image (`deploy/Containerfile.static`) built with podman and run: `loadlab
//! run` from inside the container (host network) against a loopback server of this test, its
//! JSON result read back from the container's standard output and its count checked against
//! the server's own. Rootful podman with a configuration of the test's own (`CONTAINERS_CONF`:
//! runc, cgroupfs, no default ulimits, events to a file), since crun refuses this machine's
//! hybrid cgroup layout. SKIPPED without root, podman or the static binary
//! (`scripts/build-static.sh`). Every image and container made here is removed.

use super::{have, repo_root, tempdir, text};
use loadlab_testkit::{response, Behavior, TestServer};
use std::path::{Path, PathBuf};
use std::process::Command;

const CONTAINERS_CONF: &str = "[containers]\ndefault_ulimits = []\n\n\
    [engine]\ncgroup_manager = \"cgroupfs\"\nruntime = \"runc\"\nevents_logger = \"file\"\n";

/// The static binary: `LOADLAB_STATIC_BIN`, else where scripts/build-static.sh puts it.
fn static_binary() -> Option<PathBuf> {
    let path = match std::env::var_os("LOADLAB_STATIC_BIN") {
        Some(p) => PathBuf::from(p),
        None => repo_root().join("target/static/loadlab"),
    };
    path.is_file().then_some(path)
}

struct Podman {
    conf: PathBuf,
    tag: String,
}

impl Podman {
    fn cmd(&self) -> Command {
        let mut c = Command::new("podman");
        c.env("CONTAINERS_CONF", &self.conf);
        c
    }
}

impl Drop for Podman {
    /// Removes the image (and with --force, any container left from it).
    fn drop(&mut self) {
        let _ = self.cmd().args(["rmi", "--force", &self.tag]).output();
    }
}

fn skip_reason() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (rootful podman is what runs here)".into());
    }
    if !have("podman") {
        return Some("podman is not installed (apt-get install podman runc)".into());
    }
    if static_binary().is_none() {
        return Some(
            "no static binary: run scripts/build-static.sh (or set LOADLAB_STATIC_BIN)".into(),
        );
    }
    None
}

fn build_context(dir: &Path, binary: &Path) {
    std::fs::copy(binary, dir.join("loadlab")).unwrap();
    let roots = Path::new("/etc/ssl/certs/ca-certificates.crt");
    assert!(
        roots.is_file(),
        "no CA roots at {}: apt-get install ca-certificates",
        roots.display()
    );
    std::fs::copy(roots, dir.join("ca-certificates.crt")).unwrap();
}

#[test]
fn the_scratch_image_runs_a_load_against_a_loopback_server_and_its_json_comes_back() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = tempdir("podman");
    let context = dir.join("context");
    std::fs::create_dir_all(&context).unwrap();
    build_context(&context, &static_binary().unwrap());
    let conf = dir.join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).unwrap();
    let podman = Podman {
        conf,
        tag: format!("localhost/loadlab-ship-test:{}", std::process::id()),
    };

    let out = podman
        .cmd()
        .args(["build", "--pull=never", "-f"])
        .arg(repo_root().join("deploy/Containerfile.static"))
        .args(["-t", &podman.tag])
        .arg(&context)
        .output()
        .unwrap();
    assert!(out.status.success(), "podman build: {}", text(&out));

    // Nothing but the binary and the roots: the image's size is the binary's, give or take.
    let out = podman
        .cmd()
        .args(["image", "inspect", "--format", "{{.Size}}", &podman.tag])
        .output()
        .unwrap();
    let size_bytes: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let binary_bytes = std::fs::metadata(context.join("loadlab")).unwrap().len();
    assert!(
        size_bytes < binary_bytes + 2_000_000,
        "image {size_bytes} B for a {binary_bytes} B binary"
    );

    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let out = podman
        .cmd()
        .args(["run", "--rm", "--runtime", "runc", "--network", "host"])
        .arg(&podman.tag)
        .args([
            "run", "--rate", "200", "-d", "1s", "-t", "1", "-q", "--json", "-",
        ])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert!(out.status.success(), "podman run: {}", text(&out));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out)));
    let requests = &result["measured"]["requests"];
    assert_eq!(requests["issued"], 200, "{result:#}");
    assert_eq!(
        requests["completed"].as_u64(),
        Some(server.counters().requests()),
        "{result:#}"
    );

    // --version from the image, as a user's first check.
    let out = podman
        .cmd()
        .args(["run", "--rm", "--runtime", "runc", &podman.tag, "--version"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("loadlab "),
        "{}",
        text(&out)
    );
    drop(podman);
    let _ = std::fs::remove_dir_all(&dir);
}
