//! The FROM scratch image (`deploy/Containerfile.static`) built with podman and run: `loadlab
//! run` from inside the container (host network) against a loopback server of this test, its
//! JSON result read back from the container's standard output and its count checked against
//! the server's own. Rootful podman with a configuration of the test's own (`CONTAINERS_CONF`:
//! runc, cgroupfs, no default ulimits, events to a file), since crun refuses this machine's
//! hybrid cgroup layout. And a `dist k8s` Job's pod template played as N pods with `podman
//! kube play`, each given its completion index as the Job controller would, their logs merged
//! by `dist collect --from-logs` to the server's own count. And the generator agents of `dist
//! k8s --agents` played the same way (as the StatefulSet controller would make them), found
//! by `run --generators k8s:NAME` through a `kubectl` of the test's own that answers from the
//! manifest and from podman, and a run over them counted against the server's own count. The
//! binary in the image is the static one (`scripts/build-static.sh`) when it has been built,
//! else this test's own binary with its C library (see `build_context`). SKIPPED without root
//! or podman. Every image, pod and container made here is removed, the test failing or not.

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

/// Waits for a played agent to print the address it listens on, and returns its port.
fn agent_port(podman: &Podman, container: &str) -> u16 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let log = podman.cmd().args(["logs", container]).output().unwrap();
        let said = String::from_utf8_lossy(&log.stdout).into_owned();
        let port = said
            .lines()
            .find_map(|l| l.strip_prefix("loadlab agent listening on https://127.0.0.1:"))
            .map(|p| p.trim().parse::<u16>().unwrap());
        if let Some(port) = port {
            return port;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{container} printed no address in 60 s: {}",
            text(&log)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A `kubectl` answering what `--generators k8s:NAME` asks, and nothing else: the
/// StatefulSet, the pod list and the Secret from this test's files (as a cluster would hold
/// them), each pod's log from podman. Every call is recorded in `calls`.
fn fake_kubectl(dir: &Path, podman: &Podman, name: &str) -> PathBuf {
    let kube = dir.join("kube");
    std::fs::create_dir_all(&kube).unwrap();
    let script = format!(
        r#"#!/bin/sh
# kubectl as far as `loadlab --generators k8s:{name}` asks it (written by the test).
echo "$*" >> '{kube}/calls'
case "$*" in
  "get statefulset {name} -o json") exec cat '{kube}/statefulset.json' ;;
  "get pods -l loadlab.dev/run={name},app.kubernetes.io/component=generator -o json")
    exec cat '{kube}/pods.json' ;;
  "get secret {name}-token -o json") exec cat '{kube}/secret.json' ;;
  "logs {name}-"[0-9]*" -c loadlab")
    CONTAINERS_CONF='{conf}' exec podman logs "$2-loadlab" ;;
esac
echo "kubectl (test): no answer to: $*" >&2
exit 1
"#,
        kube = kube.display(),
        conf = podman.conf.display(),
    );
    let path = kube.join("kubectl");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A pod of the StatefulSet as `kubectl get pods -o json` lists it: the template's labels
/// and spec, the agent's container port the one it listens on here, and the status of a
/// running pod on the host network (its IP the host's, loopback here).
fn listed_pod(
    template: &serde_json::Value,
    name: &str,
    port: u16,
    ready: bool,
) -> serde_json::Value {
    let mut spec = template["spec"].clone();
    spec["hostNetwork"] = true.into();
    spec["containers"][0]["ports"][0]["containerPort"] = port.into();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": template["metadata"]["labels"],
            "annotations": template["metadata"]["annotations"],
        },
        "spec": spec,
        "status": {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "hostIP": "127.0.0.1",
            "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }},
                {"type": "ContainersReady", "status": if ready { "True" } else { "False" }},
            ],
            "containerStatuses": [{
                "name": "loadlab", "image": template["spec"]["containers"][0]["image"],
                "imageID": "", "ready": ready, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": "2026-05-01T12:00:00Z"}},
            }],
        },
    })
}

fn pod_list(items: Vec<serde_json::Value>) -> Vec<u8> {
    // As kubectl prints it: a `List` (the API server's own says `PodList`).
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items,
    }))
    .unwrap()
}

#[test]
fn the_agents_pods_played_with_podman_are_a_fleet_whose_count_is_the_servers() {
    if let Some(why) = skip_reason() {
        println!("SKIPPED: {why}");
        return;
    }
    let started = std::time::Instant::now();
    let dir = tempdir("kube-agents");
    let podman = built_image(&dir, "kube-agents-test");
    const AGENTS: usize = 3;
    let name = format!("agents-{}", std::process::id());
    let out = super::loadlab()
        .args(["dist", "k8s", "--agents", "--replicas", &AGENTS.to_string()])
        .args(["--name", &name, "--image", &podman.tag])
        .args(["--cpu", "500m", "--memory", "256Mi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let manifests = loadlab_dist::agents::parse(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let token = manifests.secret.data.as_ref().unwrap()["token"].0.clone();
    let token_text = String::from_utf8(token.clone()).unwrap();

    // The Secret's volume as the kubelet makes it: a directory holding `token`, root's, 0400.
    // (podman 4.3's `kube play` cannot play a secret volume: it crashes in VolumeFromSecret.)
    let secret_dir = dir.join("secret");
    std::fs::create_dir_all(&secret_dir).unwrap();
    std::fs::write(secret_dir.join("token"), &token).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        secret_dir.join("token"),
        std::fs::Permissions::from_mode(0o400),
    )
    .unwrap();

    // What the StatefulSet controller does, by hand: pods NAME-0 .. NAME-2 from the template.
    let set = manifests.stateful_set.spec.as_ref().unwrap();
    let template = serde_json::to_value(&set.template).unwrap();
    let mut pods = PlayedPods {
        podman: &podman,
        names: Vec::new(),
    };
    for k in 0..AGENTS {
        let pod_name = format!("{name}-{k}");
        let mut spec = template["spec"].clone();
        spec["hostNetwork"] = true.into();
        // One machine here: the anti-affinity that keeps agents apart has nowhere to act.
        spec.as_object_mut().unwrap().remove("affinity");
        let container = &mut spec["containers"][0];
        // All on one host's loopback: each agent on a port the kernel picks (it prints it),
        // and no port mapping, which podman refuses on the host's network.
        let command = container["command"].as_array_mut().unwrap();
        let listen = command.iter().position(|a| a == "0.0.0.0:7070").unwrap();
        command[listen] = "127.0.0.1:0".into();
        let c = container.as_object_mut().unwrap();
        c.remove("ports");
        c.remove("readinessProbe");
        let volumes = spec["volumes"].as_array_mut().unwrap();
        let token_volume = volumes.iter_mut().find(|v| v["name"] == "token").unwrap();
        assert_eq!(
            token_volume["secret"]["secretName"],
            format!("{name}-token")
        );
        *token_volume = serde_json::json!({
            "name": "token",
            "hostPath": {"path": secret_dir, "type": "Directory"},
        });
        // podman 4.3 plays an emptyDir as a volume named after it, shared by every pod that
        // names it (the second agent would find the first's state dir locked): each pod's
        // its own directory, as each pod's emptyDir is on a node.
        let state_dir = dir.join(format!("state-{k}"));
        std::fs::create_dir_all(&state_dir).unwrap();
        let state_volume = volumes.iter_mut().find(|v| v["name"] == "state").unwrap();
        assert!(state_volume["emptyDir"].is_object(), "{state_volume}");
        *state_volume = serde_json::json!({
            "name": "state",
            "hostPath": {"path": state_dir, "type": "Directory"},
        });
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "labels": template["metadata"]["labels"]},
            "spec": spec,
        });
        let file = dir.join(format!("pod-{k}.json"));
        std::fs::write(&file, serde_json::to_vec(&pod).unwrap()).unwrap();
        pods.names.push(pod_name);
        let played = podman
            .cmd()
            .args(["kube", "play", "--network", "host"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(played.status.success(), "pod {k}: {}", text(&played));
    }
    let ports: Vec<u16> = pods
        .names
        .iter()
        .map(|p| agent_port(&podman, &format!("{p}-loadlab")))
        .collect();

    // The cluster as kubectl shows it: the manifest's StatefulSet and Secret, and the pods
    // (listed out of order: the fleet follows their ordinals).
    let kubectl = fake_kubectl(&dir, &podman, &name);
    let kube = dir.join("kube");
    std::fs::write(
        kube.join("statefulset.json"),
        serde_json::to_vec(&manifests.stateful_set).unwrap(),
    )
    .unwrap();
    std::fs::write(
        kube.join("secret.json"),
        serde_json::to_vec(&manifests.secret).unwrap(),
    )
    .unwrap();
    let listed = |ready: [bool; AGENTS]| {
        let items = [2, 0, 1]
            .into_iter()
            .map(|k| listed_pod(&template, &pods.names[k], ports[k], ready[k]))
            .collect();
        std::fs::write(kube.join("pods.json"), pod_list(items)).unwrap();
    };
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let run = |n: &str, extra: &[&str]| {
        let json = dir.join(format!("run-{n}.json"));
        let out = super::loadlab()
            .env("LOADLAB_KUBECTL", &kubectl)
            .args(["run", "--generators", &format!("k8s:{name}"), "-c", "6"])
            .args(["-n", n])
            .args(extra)
            .arg("--json")
            .arg(&json)
            .arg(server.url("/"))
            .output()
            .unwrap();
        (out, json)
    };

    // One pod not Ready: named, with its phase, and nothing sent.
    listed([true, false, true]);
    let (out, _) = run("10", &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "1 of agents {name}'s 3 pods is not ready: {name}-1 (Running; container loadlab \
             running, not yet ready)"
        )),
        "{said}"
    );
    assert_eq!(server.counters().requests(), 0);

    // All Ready: 3000 requests over the three, the merged count the server's own.
    listed([true; AGENTS]);
    let (out, json) = run("3000", &[]);
    let said = text(&out);
    eprintln!("{said}");
    assert!(out.status.success(), "{said}");
    let lines: Vec<&str> = said
        .lines()
        .filter(|l| l.trim_start().starts_with("generator "))
        .collect();
    assert_eq!(lines.len(), AGENTS, "{said}");
    for (k, line) in lines.iter().enumerate() {
        assert!(
            line.trim_start()
                .starts_with(&format!("generator {name}-{k}: ")),
            "in ordinal order, named by pod: {said}"
        );
    }
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let issued = |r: &serde_json::Value| {
        r["measured"]["requests"]["issued"].as_u64().unwrap()
            + r["warmup"]["requests"]["issued"].as_u64().unwrap_or(0)
    };
    let server_count = server.counters().requests();
    eprintln!(
        "merged issued {}, server's own count {server_count}, parts issued {:?}",
        issued(&result),
        result["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["issued"].as_u64().unwrap())
            .collect::<Vec<_>>()
    );
    assert_eq!(issued(&result), 3000, "{result:#}");
    assert_eq!(issued(&result), server_count, "{result:#}");
    assert_eq!(result["measured"]["requests"]["failed"], 0, "{result:#}");
    assert_eq!(result["shards"]["reported"], serde_json::json!([1, 2, 3]));

    // --skip-unready: the pod that is not Ready left out, named, the load split over two.
    listed([true, true, false]);
    let (out, json) = run("1000", &["--skip-unready"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("--skip-unready: left out {name}-2 (Running;")),
        "{said}"
    );
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result["shards"]["reported"], serde_json::json!([1, 2]));
    assert_eq!(issued(&result), 1000, "{result:#}");
    assert_eq!(
        server.counters().requests(),
        server_count + 1000,
        "{result:#}"
    );

    // kubectl was asked only what it should be, and the token never was an argument.
    let calls = std::fs::read_to_string(kube.join("calls")).unwrap();
    assert!(!calls.contains(token_text.trim()), "{calls}");
    assert!(
        calls.contains(&format!("logs {name}-0 -c loadlab")),
        "{calls}"
    );
    drop(pods);
    drop(podman);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("took {:.1} s", started.elapsed().as_secs_f64());
}
