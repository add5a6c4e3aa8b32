//! The manifests of `loadlab dist k8s` against the official Kubernetes schemas, as a user
//! would check them before `kubectl apply`: `kubernetes-validate --strict` (PyPI, installed
//! by scripts/setup.sh into target/k8s-venv) for the oldest and newest versions it carries
//! that the issue names, and a deliberately broken copy that must fail, so that the check can
//! fail at all. SKIPPED when the validator is not installed.

use super::{loadlab, repo_root, tempdir, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const KUBERNETES_VERSIONS: [&str; 2] = ["1.30.0", "1.37.0"];

fn validator() -> Option<PathBuf> {
    let path = repo_root().join("target/k8s-venv/bin/kubernetes-validate");
    path.is_file().then_some(path)
}

fn validate(validator: &Path, version: &str, file: &Path) -> Output {
    Command::new(validator)
        .args(["--strict", "-k", version])
        .arg(file)
        .output()
        .unwrap()
}

#[test]
fn dist_k8s_manifests_pass_strict_validation_and_a_broken_one_fails() {
    let Some(validator) = validator() else {
        println!(
            "SKIPPED: target/k8s-venv/bin/kubernetes-validate is missing (bash scripts/setup.sh \
             installs it)"
        );
        return;
    };
    let dir = tempdir("k8s");
    let out = loadlab()
        .args(["dist", "k8s", "--shards", "3", "--namespace", "perf"])
        .args(["--image", "localhost/loadlab:0.1", "--spread", "preferred"])
        .args(["--rate", "300", "-d", "10s", "-H", "X-Test: a b"])
        .arg("http://checkout.perf.svc:8080/orders")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let yaml = String::from_utf8(out.stdout).unwrap();
    let good = dir.join("loadtest.yaml");
    std::fs::write(&good, &yaml).unwrap();
    for version in KUBERNETES_VERSIONS {
        let out = validate(&validator, version, &good);
        let said = text(&out);
        assert!(out.status.success(), "{version}: {said}");
        let short = version.trim_end_matches(".0");
        for resource in ["configmap/loadlab-plan", "job/loadlab"] {
            assert!(
                said.contains(&format!(
                    "passed for resource {resource} against version {short}"
                )),
                "{version}: {said}"
            );
        }
    }

    // Broken twice over: a field the Job spec does not have (only --strict rejects it) and a
    // count that is not a number.
    for (name, from, to, why) in [
        (
            "unknown-field",
            "completionMode: Indexed",
            "completionMode: Indexed\n  shardCount: 3",
            "'shardCount' was unexpected",
        ),
        (
            "wrong-type",
            "parallelism: 3",
            "parallelism: three",
            "'three' is not of type 'integer'",
        ),
    ] {
        assert!(yaml.contains(from), "the manifest changed: {yaml}");
        let bad = dir.join(format!("{name}.yaml"));
        std::fs::write(&bad, yaml.replacen(from, to, 1)).unwrap();
        for version in KUBERNETES_VERSIONS {
            let out = validate(&validator, version, &bad);
            assert!(
                !out.status.success(),
                "{name} passed {version}: {}",
                text(&out)
            );
            assert!(
                text(&out).contains(why),
                "{name}, {version}: {}",
                text(&out)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dist_k8s_agents_manifests_pass_strict_validation_and_a_broken_one_fails() {
    let Some(validator) = validator() else {
        println!(
            "SKIPPED: target/k8s-venv/bin/kubernetes-validate is missing (bash scripts/setup.sh \
             installs it)"
        );
        return;
    };
    let dir = tempdir("k8s-agents");
    let out = loadlab()
        .args([
            "dist",
            "k8s",
            "--agents",
            "--replicas",
            "4",
            "--name",
            "loadgen",
        ])
        .args(["--namespace", "perf", "--image", "localhost/loadlab:0.1"])
        .args(["--spread", "preferred"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let yaml = String::from_utf8(out.stdout).unwrap();
    let good = dir.join("agents.yaml");
    std::fs::write(&good, &yaml).unwrap();
    for version in KUBERNETES_VERSIONS {
        let out = validate(&validator, version, &good);
        let said = text(&out);
        assert!(out.status.success(), "{version}: {said}");
        let short = version.trim_end_matches(".0");
        for resource in [
            "secret/loadgen-token",
            "service/loadgen",
            "statefulset/loadgen",
        ] {
            assert!(
                said.contains(&format!(
                    "passed for resource {resource} against version {short}"
                )),
                "{version}: {said}"
            );
        }
    }
    // A field the StatefulSet spec does not have: only --strict rejects it.
    let from = "podManagementPolicy: Parallel";
    assert!(yaml.contains(from), "the manifest changed: {yaml}");
    let bad = dir.join("unknown-field.yaml");
    std::fs::write(
        &bad,
        yaml.replacen(from, "podManagementPolicy: Parallel\n  agents: 4", 1),
    )
    .unwrap();
    for version in KUBERNETES_VERSIONS {
        let out = validate(&validator, version, &bad);
        assert!(!out.status.success(), "passed {version}: {}", text(&out));
        assert!(
            text(&out).contains("'agents' was unexpected"),
            "{version}: {}",
            text(&out)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
