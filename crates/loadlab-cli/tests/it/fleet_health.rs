//! A fleet's generators' own health per interval (issue 55): two `loadlab agent --generator`
//! processes on loopback run an open loop's shards; the coordinator's page gets each
//! generator's intervals ('part' events) with that generator's CPU and lateness, and the
//! merged intervals carry their merge by the rules of `IntervalHealth` (CPU and late requests
//! summed, the busiest thread and the worst lag the most of either: never a mean).

use crate::generators::loopback_fleet;
use crate::live::{next_event, open_events, start_command};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use serde_json::Value;
use std::collections::BTreeMap;

/// The interval's start in milliseconds (the key both streams share).
fn start_ms(iv: &Value) -> i64 {
    (iv["start_s"].as_f64().unwrap() * 1_000.0).round() as i64
}

#[test]
fn a_fleets_rows_carry_each_generators_health_every_interval() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let dir = ScratchDir::new("cli-fleet-health");
    let (_generators, fleet) = loopback_fleet(dir.path(), 2);
    let json = dir.join("run.json");
    let url = server.url("/");
    let (run, addr) = start_command(
        "run",
        &[
            "--generators",
            fleet.to_str().unwrap(),
            "-q",
            "-r",
            "200",
            "-d",
            "2s",
            "--warmup",
            "0s",
            "--interval",
            "500ms",
            "--json",
            json.to_str().unwrap(),
            &url,
        ],
    );
    let mut events = open_events(&addr, "");
    // Each generator's intervals by start, and the merged ones, as the page gets them.
    let mut parts: [BTreeMap<i64, Value>; 2] = Default::default();
    let mut merged: BTreeMap<i64, Value> = BTreeMap::new();
    while let Some(e) = next_event(&mut events) {
        match e.kind.as_str() {
            "part" => {
                let part = e.data["part"].as_u64().unwrap() as usize;
                let last = e.data["last"].clone();
                parts[part].insert(start_ms(&last), last);
            }
            "interval" => {
                let last = e.data["last"].clone();
                merged.insert(start_ms(&last), last);
            }
            "end" => break,
            _ => {}
        }
    }
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    // Every whole interval of each generator says how it fared in it.
    for (p, ivs) in parts.iter().enumerate() {
        let whole: Vec<&Value> = ivs.values().filter(|iv| iv["partial"] != true).collect();
        assert!(whole.len() >= 3, "generator {p}: {ivs:#?}");
        for iv in whole {
            let h = &iv["generator"];
            let cpu = h["cpu_s"].as_f64().unwrap_or_else(|| panic!("{iv:#}"));
            let busiest = h["busiest_thread"].as_f64().unwrap();
            // Some CPU, and no more than its threads (one a core) had in the interval.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            assert!(cpu > 0.0 && cpu <= cores * 0.6, "generator {p}: {h}");
            assert!(busiest > 0.0 && busiest <= 1.0, "generator {p}: {h}");
            // An open loop: how late it noticed its due requests, for those it completed.
            assert!(h["lag_max_us"].as_f64().is_some(), "generator {p}: {h}");
        }
    }
    // The merged interval: the generators' health merged exactly, never averaged.
    let mut compared = 0;
    for (start, m) in &merged {
        let (Some(a), Some(b)) = (parts[0].get(start), parts[1].get(start)) else {
            continue;
        };
        let (ha, hb, hm) = (&a["generator"], &b["generator"], &m["generator"]);
        let f = |h: &Value, k: &str| h[k].as_f64().unwrap_or(0.0);
        assert!(
            (f(hm, "cpu_s") - f(ha, "cpu_s") - f(hb, "cpu_s")).abs() < 1e-9,
            "{hm} {ha} {hb}"
        );
        assert_eq!(
            f(hm, "busiest_thread"),
            f(ha, "busiest_thread").max(f(hb, "busiest_thread"))
        );
        assert_eq!(
            f(hm, "lag_max_us"),
            f(ha, "lag_max_us").max(f(hb, "lag_max_us"))
        );
        assert_eq!(f(hm, "late"), f(ha, "late") + f(hb, "late"));
        compared += 1;
    }
    assert!(compared >= 3, "{merged:#?}");

    // The result's timeline keeps the merged health.
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    crate::common::assert_valid(&result);
    let timeline = result["timeline"].as_array().unwrap();
    assert!(
        timeline
            .iter()
            .filter(|iv| iv["partial"] != true)
            .all(|iv| iv["generator"]["cpu_s"].as_f64().is_some()),
        "{timeline:#?}"
    );
}
