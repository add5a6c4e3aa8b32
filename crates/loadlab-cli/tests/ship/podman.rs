//! The FROM scratch image (`deploy/Containerfile.static`) built with podman and run: `loadlab
//! run` from inside the container (host network) against a loopback server of this test, its
//! JSON result read back from the container's standard output and its count checked against
//! the server's own. Rootful podman with a configuration of the test's own (`CONTAINERS_CONF`:
//! runc, cgroupfs, no default ulimits, events to a file), since crun refuses this machine's
//! hybrid cgroup layout. And a `dist k8s` Job's pod template played as N pods with `podman
//! kube play`, each given its completion index as the Job controller would, their logs merged
//! by `dist collect --from-logs` to the server's own count. The binary in the image is the
//! static one (`scripts/build-static.sh`) when it has been built, else this test's own binary
//! with its C library (see `build_context`). SKIPPED without root or podman. Every image, pod and
//! container made here is removed.

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

/// The shared libraries a dynamic binary loads (`ldd`), by absolute path.
fn shared_libraries(binary: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(binary).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')))
        .map(PathBuf::from)
        .collect()
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
        return Some("podman is not installed (apt-get install podman runc catatonit)".into());
    }
    None
}

/// The build context of deploy/Containerfile.static: the static binary when there is one;
/// otherwise this test's own (dynamic) binary, stripped, with the C library it loads added
/// under the same paths by one extra COPY, so that CI, which builds no static binary, still
/// builds and runs the shipped Containerfile's image.
fn build_context(dir: &Path) -> PathBuf {
    let shipped = std::fs::read_to_string(repo_root().join("deploy/Containerfile.static")).unwrap();
    let containerfile = dir.join("Containerfile");
    match static_binary() {
        Some(binary) => {
            std::fs::copy(binary, dir.join("loadlab")).unwrap();
            std::fs::write(&containerfile, shipped).unwrap();
        }
        None => {
            let binary = Path::new(env!("CARGO_BIN_EXE_loadlab"));
            let out = Command::new("strip")
                .arg("-o")
                .arg(dir.join("loadlab"))
                .arg(binary)
                .output()
                .unwrap();
            assert!(out.status.success(), "strip: {}", text(&out));
            let rootfs = dir.join("rootfs");
            for lib in shared_libraries(binary) {
                let to = rootfs.join(lib.strip_prefix("/").unwrap());
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&lib, &to).unwrap();
            }
            assert!(
                shipped.contains("FROM scratch\n"),
                "deploy/Containerfile.static is FROM scratch"
            );
            let with_libs = shipped.replace("FROM scratch\n", "FROM scratch\nCOPY rootfs/ /\n");
            std::fs::write(&containerfile, with_libs).unwrap();
        }
    }
    let roots = Path::new("/etc/ssl/certs/ca-certificates.crt");
    assert!(
        roots.is_file(),
        "no CA roots at {}: apt-get install ca-certificates",
        roots.display()
    );
    std::fs::copy(roots, dir.join("ca-certificates.crt")).unwrap();
    containerfile
}

/// The FROM scratch image built from the static binary, under a tag of this test's own
/// (removed, with its containers, when the returned `Podman` is dropped).
fn built_image(dir: &Path, name: &str) -> Podman {
    let context = dir.join("context");
    std::fs::create_dir_all(&context).unwrap();
    let containerfile = build_context(&context);
    let conf = dir.join("containers.conf");
    std::fs::write(&conf, CONTAINERS_CONF).unwrap();
    let podman = Podman {
        conf,
        tag: format!("localhost/loadlab-{name}:{}", std::process::id()),
    };
    let out = podman
        .cmd()
        .args(["build", "--pull=never", "-f"])
        .arg(&containerfile)
        .args(["-t", &podman.tag])
        .arg(&context)
        .output()
        .unwrap();
    assert!(out.status.success(), "podman build: {}", text(&out));
    podman
}

#[test]
fn the_scratch_image_runs_a_load_against_a_loopback_server_and_its_json_comes_back() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = tempdir("podman");
    let podman = built_image(&dir, "ship-test");
    let context = dir.join("context");

    // Nothing but the binary and the roots: the image's size is the binary's, give or take.
    let out = podman
        .cmd()
        .args(["image", "inspect", "--format", "{{.Size}}", &podman.tag])
        .output()
        .unwrap();
    let size_bytes: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let libs_bytes: u64 = std::fs::read_dir(context.join("rootfs"))
        .map(|_| {
            shared_libraries(Path::new(env!("CARGO_BIN_EXE_loadlab")))
                .iter()
                .map(|l| std::fs::metadata(l).unwrap().len())
                .sum()
        })
        .unwrap_or(0);
    let binary_bytes = std::fs::metadata(context.join("loadlab")).unwrap().len();
    assert!(
        size_bytes < binary_bytes + libs_bytes + 2_000_000,
        "image {size_bytes} B for a {binary_bytes} B binary and {libs_bytes} B of libraries"
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

/// The pods of a played Job, removed (with their containers) on drop.
struct PlayedPods<'a> {
    podman: &'a Podman,
    names: Vec<String>,
}

impl Drop for PlayedPods<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = self
                .podman
                .cmd()
                .args(["pod", "rm", "--force", name])
                .output();
        }
    }
}

#[test]
fn the_jobs_pods_played_with_podman_merge_to_the_servers_own_count() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED: {why}");
        return;
    }
    let dir = tempdir("kube-play");
    let podman = built_image(&dir, "kube-play-test");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    const SHARDS: usize = 3;
    // Together, a little ahead: the pods are played at once and each waits for the instant.
    let start_at = std::time::SystemTime::now() + std::time::Duration::from_secs(12);
    let start_at = format!(
        "@{:.3}",
        start_at
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    );
    let out = super::loadlab()
        .args([
            "dist",
            "k8s",
            "--shards",
            &SHARDS.to_string(),
            "--name",
            "play",
        ])
        .args(["--image", &podman.tag, "--cpu", "500m", "--memory", "256Mi"])
        .args([
            "--rate",
            "300",
            "-d",
            "1s",
            "-t",
            "1",
            "--start-at",
            &start_at,
        ])
        .arg(server.url("/"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let manifests = loadlab_dist::k8s::parse(&String::from_utf8(out.stdout).unwrap()).unwrap();

    // What the Job controller does, by hand: N pods from the template, pod k with
    // JOB_COMPLETION_INDEX=k. JSON is YAML, so the typed structures serialize straight to it.
    let plan = dir.join("plan.json");
    std::fs::write(&plan, serde_json::to_vec(&manifests.plan).unwrap()).unwrap();
    let template = manifests.job.spec.as_ref().unwrap().template.clone();
    let mut pods = PlayedPods {
        podman: &podman,
        names: Vec::new(),
    };
    let mut players = Vec::new();
    for k in 0..SHARDS {
        let mut spec = serde_json::to_value(template.spec.as_ref().unwrap()).unwrap();
        spec["hostNetwork"] = true.into();
        // One machine here: the anti-affinity that keeps shards apart has nowhere to act.
        spec.as_object_mut().unwrap().remove("affinity");
        spec["containers"][0]["env"] =
            serde_json::json!([{"name": "JOB_COMPLETION_INDEX", "value": k.to_string()}]);
        let name = format!("play-{k}-{}", std::process::id());
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": template.metadata.as_ref().unwrap().labels},
            "spec": spec,
        });
        let file = dir.join(format!("pod-{k}.json"));
        std::fs::write(&file, serde_json::to_vec(&pod).unwrap()).unwrap();
        pods.names.push(name);
        let mut play = podman.cmd();
        play.args(["kube", "play", "--network", "host", "--configmap"])
            .arg(&plan)
            .arg(&file);
        players.push(play.output());
    }
    for (k, played) in players.into_iter().enumerate() {
        let played = played.unwrap();
        assert!(played.status.success(), "pod {k}: {}", text(&played));
    }
    let mut logs = Vec::new();
    for name in &pods.names {
        let container = format!("{name}-loadlab");
        let waited = podman.cmd().args(["wait", &container]).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&waited.stdout).trim(),
            "0",
            "{container}: {}",
            text(&waited)
        );
        let log = podman.cmd().args(["logs", &container]).output().unwrap();
        let file = dir.join(format!("{name}.log"));
        std::fs::write(&file, &log.stdout).unwrap();
        logs.push(file);
    }
    let merged = dir.join("merged.json");
    let out = super::loadlab()
        .args(["dist", "collect", "-o"])
        .arg(&merged)
        .arg("--from-logs")
        .args(&logs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let requests = &result["measured"]["requests"];
    assert_eq!(requests["issued"], 300, "{result:#}");
    assert_eq!(
        requests["completed"].as_u64(),
        Some(server.counters().requests()),
        "{result:#}"
    );
    drop(pods);
    drop(podman);
    let _ = std::fs::remove_dir_all(&dir);
}
