//! The fingerprint helpers against openssl, and the documented JSON of a server request.
use super::*;
use std::process::Command;

/// A certificate made by openssl, its DER bytes, and openssl's own fingerprint of it.
fn openssl_cert() -> (Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    let pem = dir.path().join("cert.pem");
    let der = dir.path().join("cert.der");
    let ok = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args([
            "-nodes",
            "-subj",
            "/CN=loadlab-agent-test",
            "-days",
            "1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&pem)
        .output()
        .expect("openssl is installed (scripts/setup.sh installs it)");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let ok = Command::new("openssl")
        .args(["x509", "-outform", "DER", "-in"])
        .arg(&pem)
        .arg("-out")
        .arg(&der)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let out = Command::new("openssl")
        .args(["x509", "-fingerprint", "-sha256", "-noout", "-in"])
        .arg(&pem)
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let printed = line.trim().split_once('=').unwrap().1.to_string();
    (std::fs::read(der).unwrap(), printed)
}

#[test]
fn fingerprint_matches_openssl_and_parses_back() {
    let (der, printed) = openssl_cert();
    let ours = fingerprint(&der);
    assert_eq!(ours, format!("sha256:{printed}"));
    let digest = ring::digest::digest(&ring::digest::SHA256, &der);
    let want: [u8; 32] = digest.as_ref().try_into().unwrap();
    let bare = printed.replace(':', "");
    for form in [
        ours.clone(),
        printed.clone(),
        printed.to_lowercase(),
        bare.clone(),
        format!("SHA256:{}", bare.to_lowercase()),
        format!("  {ours}\n"),
    ] {
        assert_eq!(parse_fingerprint(&form), Ok(want), "{form}");
    }
}

#[test]
fn bad_fingerprints_are_refused_with_the_fix() {
    for bad in [
        "",
        "sha256:",
        "AB:CD",
        &"G".repeat(64),
        &"é".repeat(32),
        &"A".repeat(66),
    ] {
        let err = parse_fingerprint(bad).unwrap_err();
        assert!(err.contains("64 hexadecimal digits"), "{err}");
    }
}

#[test]
fn server_requests_read_their_documented_json() {
    let req: OpenSession = serde_json::from_str(
        r#"{"server":{"kind":"target","name":"axum","cpus":"0.5","tls":true},
            "client":"gen1","run":null,"lease_ms":null}"#,
    )
    .unwrap();
    let ServerRequest::Target { name, launch } = &req.server else {
        panic!("{req:?}")
    };
    assert_eq!(name, "axum");
    assert_eq!(launch.cpus.as_deref(), Some("0.5"));
    assert!(launch.tls);
    assert_eq!(launch.limits_mode, "strict");
    let back: OpenSession = serde_json::from_slice(&serde_json::to_vec(&req).unwrap()).unwrap();
    assert_eq!(back, req);
    let pid: ServerRequest = serde_json::from_str(r#"{"kind":"pid","pid":42}"#).unwrap();
    assert_eq!(pid, ServerRequest::Pid { pid: 42 });
    let default: ServerRequest = serde_json::from_str(r#"{"kind":"default"}"#).unwrap();
    assert_eq!(default, ServerRequest::Default);
}

#[test]
fn tokens_follow_one_rule_on_both_sides() {
    let good = "0123456789abcdef0123456789abcdef";
    assert_eq!(parse_token(&format!("  {good}\n")), Ok(good));
    assert_eq!(parse_token("aB3-x._~+/Qz9Kp0=="), Ok("aB3-x._~+/Qz9Kp0=="));
    for (bad, says) in [
        ("", "no token"),
        ("aaaaaaaaaaaaaaaa", "different characters"),
        ("abababababababababababab", "different characters"),
        ("0123456789abc", "fewer than 16"),
        ("0123456789 abcdef0123456789", "' '"),
        ("0123456789abcdef\n0123456789abcdef", "'\\n'"),
        ("0123456789abcdef\"", "'\"'"),
        ("0123=456789abcdef0123", "'='"),
    ] {
        let err = parse_token(bad).unwrap_err();
        assert!(err.contains(says), "{bad:?}: {err}");
        assert!(err.contains("openssl rand -hex 32"), "{err}");
    }
}

/// A sample's `path` is a new optional field, not a new protocol: an older agent's sample
/// (without it) is read, and a sample without one is sent as an older agent sends it.
#[test]
fn a_samples_path_window_is_optional_both_ways() {
    let old = r#"{"seq":1,"at_ns":5,"cpu_ns":7,"throttling":null,"rss_bytes":1,
        "memory_bytes":null,"threads":1,"fds":3,"processes":1,"sent_bytes":null,
        "oom_kills":null}"#;
    let read: WireSample = serde_json::from_str(old).unwrap();
    assert_eq!(read.path, None);
    assert!(!serde_json::to_string(&read).unwrap().contains("path"));
    let with = WireSample {
        path: Some(loadlab_result::path::PathWindow {
            dt_s: 0.1,
            sockets: 4,
            acked_bytes: 65_536,
            busy_us: Some(90_000),
            ..Default::default()
        }),
        ..read
    };
    let back: WireSample = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}
