use super::find::{self, FindError};
use super::*;
use serde_json::json;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

fn plan(spread: Spread) -> Plan {
    Plan {
        name: "loadgen".into(),
        namespace: Some("perf".into()),
        image: "registry.example/loadlab:0.1".into(),
        replicas: 3,
        cpu: "1500m".into(),
        memory: "512Mi".into(),
        spread,
        token: TOKEN.into(),
    }
}

#[test]
fn the_manifests_read_back_through_the_typed_structures_unchanged() {
    let m = manifests(&plan(Spread::Required));
    let yaml = to_yaml(&m);
    let back = parse(&yaml).expect("reads back");
    assert_eq!(back, m);
    assert_eq!(to_yaml(&back), yaml);
    // The token is in the Secret's data (base64), not written out as it is.
    assert!(!yaml.contains(TOKEN), "{yaml}");
    // A Job's manifests are not agents'.
    let err = parse("---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("a Secret, a Service and a StatefulSet, found ConfigMap"),
        "{err}"
    );
}

#[test]
fn the_statefulset_runs_n_generator_agents_on_the_named_port_with_the_secrets_token() {
    let m = manifests(&plan(Spread::Required));
    let set = m.stateful_set.spec.as_ref().unwrap();
    assert_eq!(m.stateful_set.metadata.name.as_deref(), Some("loadgen"));
    assert_eq!(m.stateful_set.metadata.namespace.as_deref(), Some("perf"));
    assert_eq!(set.replicas, Some(3));
    assert_eq!(set.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(set.service_name.as_deref(), Some("loadgen"));
    let want = labels("loadgen");
    assert_eq!(want[RUN_LABEL], "loadgen");
    assert_eq!(want[COMPONENT_LABEL], "generator");
    assert_eq!(set.selector.match_labels.as_ref(), Some(&want));
    let template = set.template.metadata.as_ref().unwrap();
    assert_eq!(template.labels.as_ref(), Some(&want));
    assert_eq!(
        selector("loadgen"),
        "loadlab.dev/run=loadgen,app.kubernetes.io/component=generator"
    );

    let pod = set.template.spec.as_ref().unwrap();
    assert_eq!(pod.automount_service_account_token, Some(false));
    let c = &pod.containers[0];
    assert_eq!(c.name, CONTAINER);
    assert_eq!(c.image.as_deref(), Some("registry.example/loadlab:0.1"));
    assert_eq!(
        c.command.as_ref().unwrap(),
        &[
            "loadlab",
            "agent",
            "--generator",
            "--listen",
            "0.0.0.0:7070",
            "--token-file",
            "/etc/loadlab-agent/token",
            "--state-dir",
            "/var/lib/loadlab-agent/state"
        ]
    );
    let ports = c.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].container_port),
        (Some("agent"), 7070)
    );
    let probe = c.readiness_probe.as_ref().unwrap().tcp_socket.as_ref();
    assert_eq!(
        probe.map(|t| &t.port),
        Some(&IntOrString::String("agent".into()))
    );
    let res = c.resources.as_ref().unwrap();
    for side in [res.requests.as_ref().unwrap(), res.limits.as_ref().unwrap()] {
        assert_eq!(side["cpu"].0, "1500m");
        assert_eq!(side["memory"].0, "512Mi");
    }
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.run_as_user, Some(0), "the Secret's files are root's");
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().unwrap().drop.as_deref(),
        Some(&["ALL".to_string()][..])
    );

    // The token: the Secret's, mounted read-only, 0400, where --token-file points.
    assert_eq!(m.secret.metadata.name.as_deref(), Some("loadgen-token"));
    assert_eq!(m.secret.metadata.namespace.as_deref(), Some("perf"));
    let data = m.secret.data.as_ref().unwrap();
    assert_eq!(data[TOKEN_KEY].0, format!("{TOKEN}\n").into_bytes());
    let volumes = pod.volumes.as_ref().unwrap();
    let token = volumes.iter().find(|v| v.name == "token").unwrap();
    let source = token.secret.as_ref().unwrap();
    assert_eq!(source.secret_name.as_deref(), Some("loadgen-token"));
    assert_eq!(source.default_mode, Some(0o400));
    let mounts = c.volume_mounts.as_ref().unwrap();
    let mount = mounts.iter().find(|m| m.name == "token").unwrap();
    assert_eq!(
        (mount.mount_path.as_str(), mount.read_only),
        (TOKEN_DIR, Some(true))
    );
    let state = volumes.iter().find(|v| v.name == "state").unwrap();
    assert!(state.empty_dir.is_some());

    // A new token changes the template, so applying it rolls every agent onto it.
    let digest = &template.annotations.as_ref().unwrap()[TOKEN_DIGEST_ANNOTATION];
    assert_eq!(digest.len(), 16);
    let mut other = plan(Spread::Required);
    other.token = "fedcba9876543210fedcba9876543210".into();
    let other = manifests(&other);
    let other_template = other.stateful_set.spec.unwrap().template.metadata.unwrap();
    assert_ne!(
        &other_template.annotations.unwrap()[TOKEN_DIGEST_ANNOTATION],
        digest
    );
}

#[test]
fn the_headless_service_selects_the_agents_by_the_named_port() {
    let m = manifests(&plan(Spread::Required));
    let spec = m.service.spec.as_ref().unwrap();
    assert_eq!(m.service.metadata.name.as_deref(), Some("loadgen"));
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"));
    assert_eq!(spec.selector.as_ref(), Some(&labels("loadgen")));
    let port = &spec.ports.as_ref().unwrap()[0];
    assert_eq!(port.port, 7070);
    assert_eq!(port.name.as_deref(), Some("agent"));
    assert_eq!(
        port.target_port.as_ref(),
        Some(&IntOrString::String("agent".into()))
    );
}

#[test]
fn agents_keep_off_each_others_nodes_as_the_spread_says() {
    for spread in [Spread::Required, Spread::Preferred] {
        let m = manifests(&plan(spread));
        let pod = m.stateful_set.spec.unwrap().template.spec.unwrap();
        let anti = pod.affinity.unwrap().pod_anti_affinity.unwrap();
        let term = match spread {
            Spread::Required => {
                assert!(anti
                    .preferred_during_scheduling_ignored_during_execution
                    .is_none());
                anti.required_during_scheduling_ignored_during_execution
                    .unwrap()
                    .remove(0)
            }
            Spread::Preferred => {
                assert!(anti
                    .required_during_scheduling_ignored_during_execution
                    .is_none());
                anti.preferred_during_scheduling_ignored_during_execution
                    .unwrap()
                    .remove(0)
                    .pod_affinity_term
            }
        };
        assert_eq!(term.topology_key, "kubernetes.io/hostname");
        assert_eq!(
            term.label_selector.unwrap().match_labels,
            Some(labels("loadgen")),
            "{spread:?}: apart from the other agents"
        );
    }
}

#[test]
fn names_that_cannot_name_a_statefulset_and_its_service_are_refused() {
    for good in ["loadgen", "g1", "a-b-c", &"a".repeat(52)] {
        assert_eq!(check_name(good), Ok(()), "{good}");
    }
    for bad in ["", "1gen", "Loadgen", "load_gen", "gen-", &"a".repeat(53)] {
        let err = check_name(bad).unwrap_err();
        assert!(err.contains("--name"), "{bad}: {err}");
    }
}

// ---- finding them again ----

/// A pod as `kubectl get pods -o json` lists it.
fn pod(name: &str, ip: &str, ready: bool, phase: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "perf", "labels": labels("loadgen")},
        "spec": {"containers": [{
            "name": "loadlab",
            "image": "registry.example/loadlab:0.1",
            "ports": [{"name": "agent", "containerPort": 7070, "protocol": "TCP"}],
        }]},
        "status": {
            "phase": phase,
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
        },
    })
}

fn list(items: Vec<serde_json::Value>) -> String {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items})
        .to_string()
}

#[test]
fn ready_pods_are_read_in_ordinal_order_with_their_ip_and_named_port() {
    let text = list(vec![
        pod("loadgen-10", "10.1.0.20", true, "Running"),
        pod("loadgen-2", "fd00::7", true, "Running"),
        pod("loadgen-0", "10.1.0.5", true, "Running"),
        pod("loadgen-1", "10.1.0.9", true, "Running"),
        // Leaving after a scale-down from 12: not counted.
        pod("loadgen-11", "10.1.0.30", false, "Running"),
    ]);
    let replicas = 11;
    let mut items = serde_json::from_str::<serde_json::Value>(&text).unwrap();
    for k in 3..10 {
        let ip = format!("10.1.1.{k}");
        items["items"].as_array_mut().unwrap().push(pod(
            &format!("loadgen-{k}"),
            &ip,
            true,
            "Running",
        ));
    }
    let agents = find::pods(&items.to_string(), "loadgen", replicas).unwrap();
    assert!(agents.unready.is_empty(), "{:?}", agents.unready);
    let names: Vec<&str> = agents.ready.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names[..4],
        ["loadgen-0", "loadgen-1", "loadgen-2", "loadgen-3"]
    );
    assert_eq!(names.last(), Some(&"loadgen-10"));
    assert_eq!(names.len(), 11);
    assert_eq!(agents.ready[0].url, "https://10.1.0.5:7070");
    assert_eq!(agents.ready[2].url, "https://[fd00::7]:7070");
    let all = agents.clone().all_ready("loadgen", replicas).unwrap();
    assert_eq!(all, agents.ready);

    // The API server's own list says PodList: read the same.
    let api = text.replace("\"kind\":\"List\"", "\"kind\":\"PodList\"");
    assert!(api.contains("PodList"));
    assert!(find::pods(&api, "loadgen", 2).is_ok());
}

#[test]
fn a_pod_not_ready_is_named_with_its_phase_and_why() {
    let mut pulling = pod("loadgen-1", "", false, "Pending");
    pulling["status"]["containerStatuses"] = json!([{
        "name": "loadlab", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff"}},
    }]);
    let mut crashed = pod("loadgen-3", "10.1.0.8", false, "Running");
    crashed["status"]["containerStatuses"] = json!([{
        "name": "loadlab", "image": "x", "imageID": "", "ready": false, "restartCount": 4,
        "state": {"terminated": {"exitCode": 2, "reason": "Error"}},
    }]);
    let mut leaving = pod("loadgen-4", "10.1.0.9", true, "Running");
    leaving["metadata"]["deletionTimestamp"] = json!("2026-05-01T12:00:00Z");
    let text = list(vec![
        pod("loadgen-0", "10.1.0.5", true, "Running"),
        pulling,
        crashed,
        leaving,
    ]);
    let agents = find::pods(&text, "loadgen", 5).unwrap();
    assert_eq!(agents.ready.len(), 1);
    assert_eq!(
        agents.unready,
        [
            "loadgen-1 (Pending; container loadlab waiting: ImagePullBackOff)",
            "loadgen-2 (not made yet)",
            "loadgen-3 (Running; container loadlab exited 2: Error)",
            "loadgen-4 (being deleted)",
        ]
    );
    let err = agents.all_ready("loadgen", 5).unwrap_err().to_string();
    assert!(
        err.starts_with("4 of agents loadgen's 5 pods are not ready: loadgen-1 (Pending;"),
        "{err}"
    );
    assert!(err.contains("--skip-unready"), "{err}");
    assert!(
        err.contains("kubectl rollout status statefulset/loadgen"),
        "{err}"
    );
}

#[test]
fn no_pods_a_stranger_and_a_set_scaled_to_zero_say_what_to_do() {
    let err = find::pods(&list(vec![]), "loadgen", 3)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no pod of agents loadgen"), "{err}");
    assert!(err.contains("k8s:NAMESPACE/loadgen"), "{err}");
    let err = find::pods(
        &list(vec![pod("other-0", "10.0.0.1", true, "Running")]),
        "loadgen",
        3,
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("pod other-0 carries the labels"), "{err}");
    let err = find::pods(&list(vec![]), "loadgen", 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("0 replicas"), "{err}");
    let err = find::pods("{\"kind\": \"Status\", \"items\": []}", "loadgen", 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a list of pods"), "{err}");
}

#[test]
fn the_fingerprint_is_the_line_the_agent_printed_and_its_absence_is_named() {
    let log = "loadlab agent listening on https://0.0.0.0:7070\n  fingerprint: \
               sha256:E6:6D:F5\n  token file:  /etc/loadlab-agent/token\ngenerator flags: \
               --agent https://0.0.0.0:7070 --agent-fingerprint sha256:E6:6D:F5\n";
    assert_eq!(
        find::fingerprint("loadgen-0", log).unwrap(),
        "sha256:E6:6D:F5"
    );
    let err = find::fingerprint("loadgen-2", "exec format error\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("pod loadgen-2's log has no `fingerprint"),
        "{err}"
    );
    assert!(err.contains("its log ends: exec format error"), "{err}");
    assert!(err.contains("kubectl logs loadgen-2 -c loadlab"), "{err}");
    let err = find::fingerprint("loadgen-2", "").unwrap_err().to_string();
    assert!(err.contains("its log is empty"), "{err}");
}

#[test]
fn the_token_comes_from_the_secret_and_never_into_an_error() {
    let m = manifests(&plan(Spread::Required));
    let secret = serde_json::to_string(&m.secret).unwrap();
    assert_eq!(
        find::token(&secret, "loadgen-token").unwrap(),
        format!("{TOKEN}\n")
    );
    let no_key = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                        "data": {"other": "eA=="}});
    assert!(matches!(
        find::token(&no_key.to_string(), "loadgen-token"),
        Err(FindError::NoToken(_))
    ));
    let secret_text = "not base64 but secret!";
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                     "data": {"token": secret_text}});
    let err = find::token(&bad.to_string(), "loadgen-token")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("secret!"), "{err}");
    assert!(err.contains("loadgen-token"), "{err}");
}

#[test]
fn the_replica_count_is_the_statefulsets() {
    let m = manifests(&plan(Spread::Required));
    let set = serde_json::to_string(&m.stateful_set).unwrap();
    assert_eq!(find::replicas(&set).unwrap(), 3);
    let bare = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "x"}});
    assert_eq!(find::replicas(&bare.to_string()).unwrap(), 1);
    assert!(find::replicas("{\"kind\": \"Job\"}").is_err());
}
