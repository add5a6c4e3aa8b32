//! Validation, table by table: what passes, and what is refused with which fix.

use super::*;

fn spec(url: &str) -> RunSpec {
    RunSpec {
        url: url.into(),
        ..RunSpec::default()
    }
}

#[test]
fn url_parts() {
    let c = spec("http://127.0.0.1:8080/a?b=1").validate().unwrap();
    assert_eq!(c.url.host, "127.0.0.1");
    assert_eq!(c.url.port, 8080);
    assert_eq!(c.url.authority, "127.0.0.1:8080");
    assert_eq!(c.url.path_and_query, "/a?b=1");
    let c = spec("http://example.test").validate().unwrap();
    assert_eq!((c.url.port, c.url.authority.as_str()), (80, "example.test"));
    let c = spec("https://example.test/x").validate().unwrap();
    assert_eq!(
        (c.url.port, c.url.authority.as_str()),
        (443, "example.test")
    );
    assert!(c.tls.is_some());
    assert_eq!(c.url.path_and_query, "/x");
    let c = spec("http://example.test").validate().unwrap();
    assert_eq!(c.url.path_and_query, "/");
    assert!(c.tls.is_none());
    let c = spec("http://[::1]:9000/x").validate().unwrap();
    assert_eq!(
        (c.url.host.as_str(), c.url.authority.as_str()),
        ("::1", "[::1]:9000")
    );
}

#[test]
fn rejections_name_the_flag_and_the_fix() {
    let cases: &[(RunSpec, &str, &str)] = &[
        (spec("localhost:8080/"), "url", "http://localhost:8080/"),
        // Issue 51, item 6: streams are bounded as connections are (4294967296 aborted on a
        // failed allocation; 1,000,000 on one connection took 1.6-2.7 GB).
        (
            RunSpec {
                http2: true,
                streams: 4_294_967_296,
                ..spec("http://a/")
            },
            "streams",
            "4294967296 streams on a connection, more than one loadlab carries (1000000)",
        ),
        (
            RunSpec {
                http2: true,
                streams: 1_000,
                connections: Some(10_000),
                ..spec("http://a/")
            },
            "streams",
            "10000 connections x 1000 streams is 10000000 requests at once",
        ),
        (spec("ftp://x/"), "url", "use http://"),
        (
            RunSpec {
                tls: TlsSpec {
                    insecure: true,
                    ..TlsSpec::default()
                },
                ..spec("http://a/")
            },
            "url",
            "need an https:// URL",
        ),
        (
            RunSpec {
                tls: TlsSpec {
                    ca_pem: Some(b"not a pem".to_vec()),
                    ..TlsSpec::default()
                },
                ..spec("https://a/")
            },
            "tls.ca",
            "no PEM certificate",
        ),
        (
            RunSpec {
                connections: Some(0),
                ..spec("http://a/")
            },
            "connections",
            "-c 50",
        ),
        (
            RunSpec {
                headers: vec!["NoColon".into()],
                ..spec("http://a/")
            },
            "headers",
            "Name: value",
        ),
        (
            RunSpec {
                headers: vec!["Bad Name: x".into()],
                ..spec("http://a/")
            },
            "headers",
            "not a valid header name",
        ),
        (
            RunSpec {
                requests: Some(0),
                ..spec("http://a/")
            },
            "requests",
            "-n 10000",
        ),
        (
            RunSpec {
                requests: Some(5),
                duration: Some(Duration::from_secs(1)),
                ..spec("http://a/")
            },
            "duration",
            "one of them",
        ),
        (
            RunSpec {
                method: "G T".into(),
                ..spec("http://a/")
            },
            "method",
            "GET",
        ),
    ];
    for (s, flag, fix) in cases {
        let err = s.validate().unwrap_err();
        assert_eq!(err.setting, *flag, "{err}");
        assert!(err.to_string().contains(fix), "`{err}` lacks `{fix}`");
    }
}

#[test]
fn load_models() {
    let c = spec("http://a/").validate().unwrap();
    assert_eq!(c.model, Model::Closed { stages: None });
    assert_eq!(
        (c.connections, c.stop),
        (50, Stop::Duration(DEFAULT_DURATION))
    );

    let c = RunSpec {
        rate: Some(500.0),
        duration: Some(Duration::from_secs(3)),
        ..spec("http://a/")
    }
    .validate()
    .unwrap();
    assert!(c.is_open_loop());
    assert_eq!(
        (c.connections, c.stop),
        (
            DEFAULT_MAX_CONNECTIONS,
            Stop::Duration(Duration::from_secs(3))
        )
    );

    let c = RunSpec {
        stages: Some("1s:10, 2s:10->40".into()),
        ..spec("http://a/")
    }
    .validate()
    .unwrap();
    assert!(c.is_open_loop());
    assert_eq!(c.stop, Stop::Duration(Duration::from_secs(3)));

    let c = RunSpec {
        stages: Some("1s:2, 2s:2->8".into()),
        closed_stages: true,
        ..spec("http://a/")
    }
    .validate()
    .unwrap();
    assert!(matches!(c.model, Model::Closed { stages: Some(_) }));
    assert_eq!(c.connections, 8);
}

#[test]
fn load_model_conflicts_name_the_fix() {
    let cases: &[(RunSpec, &str, &str)] = &[
        (
            RunSpec {
                rate: Some(0.0),
                ..spec("http://a/")
            },
            "rate",
            "--rate 1000",
        ),
        (
            RunSpec {
                rate: Some(10.0),
                requests: Some(5),
                ..spec("http://a/")
            },
            "requests",
            "duration",
        ),
        (
            RunSpec {
                rate: Some(10.0),
                connections: Some(5),
                ..spec("http://a/")
            },
            "connections",
            "--max-connections",
        ),
        (
            RunSpec {
                rate: Some(10.0),
                stages: Some("1s:5".into()),
                ..spec("http://a/")
            },
            "rate",
            "one of them",
        ),
        (
            RunSpec {
                stages: Some("1s:5".into()),
                duration: Some(Duration::from_secs(1)),
                ..spec("http://a/")
            },
            "stages",
            "drop -d",
        ),
        (
            RunSpec {
                stages: Some("1s".into()),
                ..spec("http://a/")
            },
            "stages",
            "DURATION:LEVEL",
        ),
        (
            RunSpec {
                closed_stages: true,
                ..spec("http://a/")
            },
            "closed_stages",
            "--stages",
        ),
        (
            RunSpec {
                max_connections: Some(10),
                ..spec("http://a/")
            },
            "max_connections",
            "open loop",
        ),
        (
            RunSpec {
                interval: Duration::from_millis(250),
                ..spec("http://a/")
            },
            "interval",
            "100ms",
        ),
    ];
    for (s, flag, fix) in cases {
        let err = s.validate().unwrap_err();
        assert_eq!(err.setting, *flag, "{err}");
        assert!(err.to_string().contains(fix), "`{err}` lacks `{fix}`");
    }
}

#[test]
fn threads_never_exceed_connections() {
    let c = RunSpec {
        connections: Some(3),
        threads: Some(8),
        ..spec("http://a/")
    }
    .validate()
    .unwrap();
    assert_eq!(c.threads, 3);
}

/// Hostile input from issue 15: each is refused up front, naming the flag.
#[test]
fn out_of_range_values_are_refused_by_name() {
    let base = || spec("http://127.0.0.1:8080/");
    let cases: Vec<(RunSpec, &str)> = vec![
        (spec("http://127.0.0.1:99999/"), "invalid port"),
        (spec("http://127.0.0.1:abc/"), "invalid port"),
        (spec("http://127.0.0.1:-1/"), "invalid port"),
        (spec("http://127.0.0.1:80x/"), "invalid port"),
        (spec("http://127.0.0.1:65616/"), "invalid port"),
        (spec("http://127.0.0.1:/"), "invalid port"),
        (spec("http://127.0.0.1:0/"), "invalid port"),
        (spec("http://[::1]:0/"), "invalid port"),
        (spec("http://user:pass@127.0.0.1:8080/"), "credentials"),
        (
            RunSpec {
                rate: Some(1e12),
                ..base()
            },
            "rate",
        ),
        (
            RunSpec {
                rate: Some(1e9),
                ..base()
            },
            "more than one machine",
        ),
        (
            RunSpec {
                stages: Some("1s:1e12".into()),
                ..base()
            },
            "stages",
        ),
        (
            RunSpec {
                connections: Some(4_294_967_296),
                ..base()
            },
            "connections",
        ),
        (
            RunSpec {
                stages: Some("1s:4294967296".into()),
                closed_stages: true,
                ..base()
            },
            "more than one loadlab opens",
        ),
        (
            RunSpec {
                stages: Some("1s:2.5".into()),
                closed_stages: true,
                ..base()
            },
            "not a whole number",
        ),
        (
            RunSpec {
                duration: Some(Duration::from_secs(u64::MAX)),
                ..base()
            },
            "duration",
        ),
        (
            RunSpec {
                warmup: Duration::from_secs(u64::MAX),
                ..base()
            },
            "warmup",
        ),
        (
            RunSpec {
                timeout: Duration::from_secs(u64::MAX),
                ..base()
            },
            "timeout",
        ),
        (
            RunSpec {
                interval: Duration::from_secs(u64::MAX),
                ..base()
            },
            "interval",
        ),
        // It panicked a worker (issue 46, item 3).
        (
            RunSpec {
                pace: Some(Duration::from_secs(u64::MAX)),
                ..base()
            },
            "pace",
        ),
    ];
    for (spec, needle) in cases {
        let url = spec.url.clone();
        let err = spec.validate().expect_err(&url).to_string();
        assert!(err.contains(needle), "{url}: {err}");
    }
    // A scenario's think times end where every other duration does (the scenario crate
    // checks them as it reads the file).
    assert_eq!(
        loadlab_scenario::think::MAX_THINK,
        super::validate::MAX_DURATION
    );
    // Good ports still pass, with and without brackets.
    for ok in ["http://127.0.0.1:1/", "http://[::1]:65535/x", "http://h/"] {
        spec(ok).validate().unwrap();
    }
}
