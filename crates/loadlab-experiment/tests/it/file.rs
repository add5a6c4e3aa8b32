//! Experiment files: the examples in scenarios/ read and plan as documented; bad files are
//! refused with the key and the fix.

use loadlab_experiment::file::{Protocol, Source};
use loadlab_experiment::{Experiment, Plan};
use std::path::Path;

fn scenario(name: &str) -> Experiment {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Experiment::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_portfolio_migration_reads_as_post_000_ran_it() {
    let e = scenario("portfolio-migration.toml");
    assert_eq!(e.variants.len(), 2);
    assert_eq!(e.variants[e.control].name, "actix-web");
    assert_eq!(e.variants[1].source, Source::Target("rust-axum".into()));
    assert_eq!(e.base.cpus, Some(0.08));
    assert_eq!(e.base.memory.as_deref(), Some("128Mi"));
    assert_eq!(
        e.base.paths,
        ["/", "/blogs", "/blogs/001", "/version", "/not-found"]
    );
    assert_eq!(e.repetitions, 5);
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.arms.len(), 2);
    assert_eq!(plan.runs.len(), 10);
    // Each block runs both arms.
    for block in plan.runs.chunks(2) {
        assert_ne!(block[0].arm, block[1].arm);
        assert_eq!(block[0].block, block[1].block);
    }
    // Same file, same plan; another seed, another order and another hash.
    assert_eq!(Plan::new(&e).unwrap().hash, plan.hash);
    let mut other = e.clone();
    other.seed = 2;
    assert_ne!(Plan::new(&other).unwrap().hash, plan.hash);
}

/// Post 000's question over HTTP/3: both targets launched over TLS with the run's own CA (no
/// cacert), and the repository's lab (its manifests read, nothing built) says both serve it.
#[test]
fn the_portfolio_migration_over_http3_reads_and_its_targets_serve_it() {
    let mut e = scenario("portfolio-migration-h3.toml");
    assert_eq!(e.protocols(), [Protocol::Http3]);
    assert_eq!(e.base.streams, Some(6));
    assert_eq!(e.cacert, None);
    let sources: Vec<&Source> = e.variants.iter().map(|v| &v.source).collect();
    assert_eq!(
        sources,
        [
            &Source::Target("rust-actix-web".into()),
            &Source::Target("rust-axum".into())
        ]
    );
    let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../targets");
    // The file sets its warm-up, so the targets' recommended ones leave no note.
    assert_eq!(e.read_lab_targets_from(Some(&lab)), Ok(Vec::new()));
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.arms.len(), 2);
    assert_eq!(plan.runs.len(), 10);
}

#[test]
fn a_matrix_multiplies_the_arms() {
    let e = scenario("workers-and-backlog.toml");
    let plan = Plan::new(&e).unwrap();
    let labels: Vec<&str> = plan.arms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "axum[env.BACKLOG=16,env.WORKERS=1]",
            "axum[env.BACKLOG=16,env.WORKERS=2]",
            "axum[env.BACKLOG=1024,env.WORKERS=1]",
            "axum[env.BACKLOG=1024,env.WORKERS=2]",
        ]
    );
    assert_eq!(plan.arms[3].settings.env["WORKERS"], "2");
    assert_eq!(plan.arms[3].settings.env["BACKLOG"], "1024");
    assert!(!plan.arms[0].settings.keepalive);
    assert_eq!(plan.runs.len(), 4 * 5);
}

#[test]
fn axes_override_defaults_and_protocols_parse() {
    let e = Experiment::parse(
        r#"
name = "x"
[load]
connections = 10
[matrix]
rate = [100, 200]
protocol = ["http1", "h2c"]
[[variant]]
name = "a"
url = "http://127.0.0.1:9/"
"#,
    )
    .unwrap();
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.arms.len(), 4);
    let last = &plan.arms[3].settings;
    assert_eq!((last.rate, last.connections), (Some(200.0), None));
    assert_eq!(last.protocol, Protocol::Http2);
    assert_eq!(
        e.variants[0].source,
        Source::Url("http://127.0.0.1:9".into())
    );
}

#[test]
fn bad_files_name_the_key_and_the_fix() {
    let cases = [
        ("name = \"x\"\n", "no [[variant]]"),
        ("name = \"a:b\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "without ':'"),
        ("name = \"x\"\nrepetitions = 0\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "repetitions"),
        ("name = \"x\"\n[[variant]]\nname=\"v\"", "exactly one of target"),
        ("name = \"x\"\n[[variant]]\nname=\"v\"\nurl=\"ftp://x\"", "http://"),
        ("name = \"x\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"\n[[variant]]\nname=\"v\"\nurl=\"http://y\"", "appears twice"),
        ("name = \"x\"\nduration = \"soon\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "not a duration"),
        ("name = \"x\"\n[load]\nrate = 5\nconnections = 3\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "exclude each other"),
        ("name = \"x\"\n[load]\nprotocol = \"quic\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "unknown protocol"),
        ("name = \"x\"\n[load]\npath = \"plaintext\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "must start with /"),
        ("name = \"x\"\n[compare]\ncontrol = \"nope\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "no [[variant]] has that name"),
        ("name = \"x\"\nrepetition = 3\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "unknown field"),
        ("name = \"x\"\n[matrix]\nbandwidth = [\"2Mbps\"]\n[[variant]]\nname=\"v\"\ntarget=\"t\"", "[matrix] bandwidth: \"2Mbps\" is ambiguous"),
        ("name = \"x\"\n[limits]\nbandwidth_up = \"fast\"\n[[variant]]\nname=\"v\"\ntarget=\"t\"", "[limits] bandwidth_up"),
        ("name = \"x\"\n[limits]\nbandwidth = \"2MBps\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"", "needs a server loadlab starts"),
        ("name = \"x\"\n[[variant]]\nname=\"v\"\nurl=\"http://x\"\nlimits = { bandwidth = \"1MBps\" }", "needs a server loadlab starts"),
    ];
    for (text, needle) in cases {
        let err = Experiment::parse(text).unwrap_err();
        assert!(err.contains(needle), "{text:?}: {err}");
    }
}

#[test]
fn bandwidth_is_an_axis_as_post_001_varied_it() {
    let e = scenario("bandwidth-caps.toml");
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.arms.len(), 12);
    assert_eq!(
        plan.arms[0].label,
        "actix-web[connections=100,bandwidth=2MBps]"
    );
    assert_eq!(
        plan.arms[0].settings.bandwidth.both.as_deref(),
        Some("2MBps")
    );
    assert_eq!(
        plan.arms[5].label,
        "actix-web[connections=500,bandwidth=10MBps]"
    );
    assert_eq!(plan.arms[5].settings.connections, Some(500));
    // A variant's own caps, up and down apart, and an axis over them.
    let e = Experiment::parse(
        "name = \"x\"\n[limits]\nbandwidth = \"2MBps\"\n[[variant]]\nname=\"a\"\ntarget=\"t\"\n\
         [[variant]]\nname=\"b\"\ntarget=\"t\"\nlimits = { bandwidth_down = \"500kBps\" }",
    )
    .unwrap();
    let plan = Plan::new(&e).unwrap();
    let b = &plan.arms[1].settings.bandwidth;
    assert_eq!(
        (b.both.as_deref(), b.down.as_deref()),
        (Some("2MBps"), Some("500kBps"))
    );
    // Without caps, the plan's hash is what it was before caps existed.
    let plain = scenario("workers-and-backlog.toml");
    assert!(!serde_json::to_string(&Plan::new(&plain).unwrap().arms)
        .unwrap()
        .contains("bandwidth"));
}

#[test]
fn a_scenario_in_load_or_a_variant_is_named_relative_to_the_file() {
    let dir = std::env::temp_dir().join(format!("loadlab-exp-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        r#"
name = "journeys"
[load]
connections = 4
scenario = "journeys/portfolio.toml"
[[variant]]
name = "a"
url = "http://127.0.0.1:8080"
[[variant]]
name = "b"
url = "http://127.0.0.1:8081"
scenario = "/abs/other.toml"
"#,
    )
    .unwrap();
    let e = Experiment::load(&file).unwrap();
    let plan = Plan::new(&e).unwrap();
    let a = plan.arms[0].settings.scenario.clone().unwrap();
    assert_eq!(Path::new(&a), dir.join("journeys/portfolio.toml"));
    assert_eq!(
        plan.arms[1].settings.scenario.as_deref(),
        Some("/abs/other.toml")
    );

    std::fs::write(
        &file,
        "name = \"x\"\n[load]\nscenario = \"s.toml\"\npath = \"/a\"\n[[variant]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let err = Experiment::load(&file).unwrap_err().to_string();
    assert!(
        err.contains("[load] scenario") && err.contains("drop path"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `[server] agent`: every variant's server on the agent's host, a variant's own agent over
/// the file's, the token file named relative to the file; what cannot cross to another host
/// refused with the fix.
#[test]
fn an_agent_in_server_puts_the_variants_on_its_host() {
    let text = r#"
name = "remote"
[server]
agent = "https://169.254.1.1:7070"
agent_token_file = "agent.token"
agent_fingerprint = "sha256:AB"
[[variant]]
name = "a"
target = "rust-axum"
[[variant]]
name = "b"
url = "http://169.254.1.1:8080"
[variant.server]
agent = "https://169.254.1.2:7070"
"#;
    let e = Experiment::parse(text).unwrap();
    let a = e.variants[0].agent.as_ref().unwrap();
    assert_eq!(a.url, "https://169.254.1.1:7070");
    assert_eq!(a.token_file, "agent.token");
    assert_eq!(
        e.variants[1].agent.as_ref().unwrap().url,
        "https://169.254.1.2:7070"
    );
    // Without an agent the plan (and its hash) is what it was.
    let plain = text.replace("[server]\nagent = \"https://169.254.1.1:7070\"\nagent_token_file = \"agent.token\"\nagent_fingerprint = \"sha256:AB\"\n", "").replace("[variant.server]\nagent = \"https://169.254.1.2:7070\"\n", "");
    let plain = Experiment::parse(&plain).unwrap();
    assert!(plain.variants.iter().all(|v| v.agent.is_none()));
    assert_ne!(Plan::new(&plain).unwrap().hash, Plan::new(&e).unwrap().hash);
    for (bad, says) in [
        (
            text.replace("https://169.254.1.1", "http://169.254.1.1"),
            "HTTPS only",
        ),
        (
            text.replace("agent_token_file = \"agent.token\"\n", ""),
            "agent_token_file",
        ),
        (
            text.replace("agent_fingerprint = \"sha256:AB\"\n", ""),
            "agent_fingerprint",
        ),
        (format!("upstream = true\n{text}"), "mock upstream"),
        (
            text.replace("[server]", "[limits]\nbandwidth = \"2MBps\"\n[server]"),
            "bandwidth",
        ),
    ] {
        let err = Experiment::parse(&bad).unwrap_err();
        assert!(err.contains(says), "{says}: {err}");
    }
}

/// `protocol = "http3"` (or `h3`) with the arms' streams and 0-RTT; the CA named relative to
/// the file; a plain URL, which cannot speak it, refused with the exact reason and fix.
#[test]
fn http3_arms_parse_and_need_https_or_launched_variants() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h3.toml");
    std::fs::write(
        &file,
        r#"
name = "h3"
[load]
connections = 2
streams = 10
keepalive = false
http3_0rtt = true
cacert = "certs/ca.pem"
[matrix]
protocol = ["h2", "h3"]
[[variant]]
name = "a"
url = "https://127.0.0.1:8443/"
"#,
    )
    .unwrap();
    let e = Experiment::load(&file).unwrap();
    assert_eq!(
        e.cacert.as_deref().map(Path::new),
        Some(dir.path().join("certs/ca.pem").as_path())
    );
    let plan = Plan::new(&e).unwrap();
    let protocols: Vec<Protocol> = plan.arms.iter().map(|a| a.settings.protocol).collect();
    assert_eq!(protocols, [Protocol::Http2, Protocol::Http3]);
    let h3 = &plan.arms[1].settings;
    assert_eq!(
        (h3.streams, h3.http3_0rtt, h3.keepalive),
        (Some(10), true, false)
    );
    assert!(Experiment::parse(
        "name = \"x\"\n[load]\nprotocol = \"http3\"\n[[variant]]\nname=\"v\"\nurl=\"https://x\""
    )
    .is_ok());

    let http3 = "name = \"x\"\n[load]\nprotocol = \"http3\"\n[[variant]]\nname=\"v\"\n";
    // A server loadlab starts is served over HTTPS (and HTTP/3) with a throwaway certificate.
    for source in ["target=\"rust-axum\"", "exec=\"./server\""] {
        let e = Experiment::parse(&format!("{http3}{source}")).unwrap();
        assert_eq!(e.protocols(), [Protocol::Http3], "{source}");
    }
    let cases = [
        (
            format!("{http3}url=\"http://127.0.0.1:8080\""),
            "[[variant]] v: protocol http3 is QUIC, which is always encrypted (TLS 1.3), but its \
             url \"http://127.0.0.1:8080\" is plain http: give the server's https:// URL (and \
             [load] cacert = \"ca.pem\" when a private CA signed its certificate), or use \
             protocol http1 or http2",
        ),
        // A matrix value counts as the [load] one does, and so does https.
        (
            "name = \"x\"\n[matrix]\nprotocol = [\"http1\", \"https\"]\n[[variant]]\nname=\"v\"\nurl=\"http://x\"".into(),
            "[[variant]] v: protocol https is HTTP/1.1 over TLS, but its url \"http://x\" is plain \
             http: give the server's https:// URL (and [load] cacert = \"ca.pem\" when a private \
             CA signed its certificate), or use protocol http1 or http2",
        ),
        (
            "name = \"x\"\n[load]\nhttp3_0rtt = true\n[[variant]]\nname=\"v\"\nurl=\"https://x\"".into(),
            "[load] http3_0rtt: 0-RTT is HTTP/3's; set [load] protocol = \"http3\" (or put \
             \"http3\" in [matrix] protocol), or drop http3_0rtt",
        ),
        (
            "name = \"x\"\n[load]\nstreams = 10\n[[variant]]\nname=\"v\"\nurl=\"https://x\"".into(),
            "[load] streams: concurrent streams are HTTP/2's and HTTP/3's; set [load] protocol = \
             \"http2\" or \"http3\", or drop streams",
        ),
        (
            "name = \"x\"\n[load]\nprotocol = \"h3\"\nstreams = 0\n[[variant]]\nname=\"v\"\nurl=\"https://x\"".into(),
            "[load] streams = 0: must be at least 1; try streams = 10",
        ),
        (
            "name = \"x\"\n[load]\nprotocol = \"http2\"\npipeline = 16\n[[variant]]\nname=\"v\"\nurl=\"http://x\"".into(),
            "[load] pipeline: pipelining is HTTP/1.1's (HTTP/2 and HTTP/3 carry requests on \
             concurrent streams: give [load] streams instead); set [load] protocol = \"http1\" \
             or \"https\", or drop pipeline",
        ),
        (
            "name = \"x\"\n[load]\npipeline = 0\n[[variant]]\nname=\"v\"\nurl=\"http://x\"".into(),
            "[load] pipeline = 0: must be at least 1; try pipeline = 16",
        ),
        (
            "name = \"x\"\n[load]\nprotocol = \"quic\"\n[[variant]]\nname=\"v\"\nurl=\"https://x\"".into(),
            "[load] protocol: unknown protocol \"quic\"; use http1, https, http2 or http3",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(Experiment::parse(&text).unwrap_err(), want, "{text}");
    }
}
