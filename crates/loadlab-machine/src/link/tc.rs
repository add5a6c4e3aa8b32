//! The qdiscs that shape one direction of the link, as `tc` arguments (pure, tested), and
//! their counters from `tc -s -j qdisc show` (parsed here).
//!
//! A cap is a token bucket (`tbf`): the rate in bytes per second on the wire (Ethernet, IP
//! and TCP headers included, as any link counts), a bucket of a couple of milliseconds (at
//! least four full-sized frames, so a frame always fits and the start gets no long free
//! burst), and a queue of 100 ms at the rate (what a router's buffer might hold; beyond it
//! packets drop and TCP retransmits). Delay and loss are `netem`'s, with the bucket as its
//! child when both are asked.

use crate::rate::Rate;
use loadlab_result::machine::QdiscStats;
use std::time::Duration;

/// What shapes one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shape {
    pub rate: Option<Rate>,
    pub delay: Option<Duration>,
    pub loss_percent: Option<f64>,
}

/// A full Ethernet frame on a 1500-byte MTU.
const FRAME: f64 = 1514.0;
/// The bucket holds this much time at the rate, and at least [`MIN_BUCKET_FRAMES`] frames.
const BUCKET_TIME_S: f64 = 0.002;
const MIN_BUCKET_FRAMES: f64 = 4.0;
/// The queue: this much time at the rate.
pub const QUEUE_LATENCY_MS: u64 = 100;

impl Shape {
    pub fn is_empty(&self) -> bool {
        self.rate.is_none() && self.delay.is_none() && self.loss_percent.is_none()
    }

    pub fn needs_netem(&self) -> bool {
        self.delay.is_some() || self.loss_percent.is_some()
    }

    /// The bucket's size in bytes for `rate`.
    pub fn burst_bytes(rate: Rate) -> u64 {
        (rate.bytes_per_s * BUCKET_TIME_S)
            .max(FRAME * MIN_BUCKET_FRAMES)
            .ceil() as u64
    }

    /// The `tc qdisc add` commands (arguments after `tc`) for `dev`, in order; `netns` runs
    /// them inside a namespace (`tc -n NAME`).
    pub fn commands(&self, dev: &str, netns: Option<&str>) -> Vec<Vec<String>> {
        let head = |parent: &[&str]| {
            let mut v: Vec<String> = Vec::new();
            if let Some(ns) = netns {
                v.extend(["-n".to_string(), ns.to_string()]);
            }
            v.extend(["qdisc", "add", "dev", dev].map(String::from));
            v.extend(parent.iter().map(|s| s.to_string()));
            v
        };
        let mut out = Vec::new();
        let netem = self.needs_netem().then(|| {
            let mut v = vec!["netem".to_string()];
            if let Some(d) = self.delay {
                v.extend(["delay".into(), format!("{}us", d.as_micros())]);
            }
            if let Some(l) = self.loss_percent {
                v.extend(["loss".into(), format!("{l}%")]);
            }
            v
        });
        let tbf = self.rate.map(|rate| {
            vec![
                "tbf".to_string(),
                "rate".into(),
                format!("{}bps", rate.bytes_per_s.round() as u64),
                "burst".into(),
                Shape::burst_bytes(rate).to_string(),
                "latency".into(),
                format!("{QUEUE_LATENCY_MS}ms"),
            ]
        });
        match (netem, tbf) {
            (Some(netem), Some(tbf)) => {
                let mut a = head(&["root", "handle", "1:"]);
                a.extend(netem);
                out.push(a);
                let mut b = head(&["parent", "1:1", "handle", "10:"]);
                b.extend(tbf);
                out.push(b);
            }
            (Some(one), None) | (None, Some(one)) => {
                let mut a = head(&["root", "handle", "1:"]);
                a.extend(one);
                out.push(a);
            }
            (None, None) => {}
        }
        out
    }

    /// The qdiscs in words, for the result: `tbf rate 2000000 B/s burst 6056 B, 100 ms queue`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.needs_netem() {
            let mut netem = "netem".to_string();
            if let Some(d) = self.delay {
                netem.push_str(&format!(" delay {} ms", d.as_secs_f64() * 1e3));
            }
            if let Some(l) = self.loss_percent {
                netem.push_str(&format!(" loss {l}%"));
            }
            parts.push(netem);
        }
        if let Some(rate) = self.rate {
            parts.push(format!(
                "tbf rate {} B/s burst {} B latency {QUEUE_LATENCY_MS} ms",
                rate.bytes_per_s.round() as u64,
                Shape::burst_bytes(rate)
            ));
        }
        parts.join(", then ")
    }
}

/// The counters of a device's qdiscs from `tc -s -j qdisc show dev DEV`: bytes and packets
/// of the root, drops and overlimits of every qdisc (a child's drops are the link's too).
pub fn parse_stats(json: &str) -> Option<QdiscStats> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let qdiscs = value.as_array()?;
    let get = |q: &serde_json::Value, k: &str| q.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let root = qdiscs
        .iter()
        .find(|q| q.get("root").and_then(|r| r.as_bool()) == Some(true))?;
    Some(QdiscStats {
        bytes: get(root, "bytes"),
        packets: get(root, "packets"),
        drops: qdiscs.iter().map(|q| get(q, "drops")).sum(),
        overlimits: qdiscs.iter().map(|q| get(q, "overlimits")).sum(),
        requeues: get(root, "requeues"),
    })
}

/// `tc`'s answer when the kernel has no such qdisc.
pub fn is_unknown_qdisc(stderr: &str) -> bool {
    stderr.contains("Specified qdisc kind is unknown") || stderr.contains("Unknown qdisc")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> Option<Rate> {
        Some(Rate::parse(s).unwrap())
    }

    #[test]
    fn commands_per_shape() {
        let cap = Shape {
            rate: rate("2MBps"),
            ..Shape::default()
        };
        assert_eq!(
            cap.commands("loadlab-0010920", None),
            vec![vec![
                "qdisc",
                "add",
                "dev",
                "loadlab-0010920",
                "root",
                "handle",
                "1:",
                "tbf",
                "rate",
                "2000000bps",
                "burst",
                "6056",
                "latency",
                "100ms"
            ]]
        );
        assert_eq!(
            cap.commands("veth0", Some("loadlab-1-0"))[0][..6],
            ["-n", "loadlab-1-0", "qdisc", "add", "dev", "veth0"]
        );
        // 10 MB/s: 2 ms of it.
        assert_eq!(Shape::burst_bytes(Rate::parse("10MBps").unwrap()), 20_000);
        let both = Shape {
            rate: rate("6MBps"),
            delay: Some(Duration::from_millis(20)),
            loss_percent: Some(0.1),
        };
        let c = both.commands("d", None);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0][4..],
            ["root", "handle", "1:", "netem", "delay", "20000us", "loss", "0.1%"]
        );
        assert_eq!(c[1][4..9], ["parent", "1:1", "handle", "10:", "tbf"]);
        assert_eq!(
            both.describe(),
            "netem delay 20 ms loss 0.1%, then tbf rate 6000000 B/s burst 12000 B latency 100 ms"
        );
        assert!(Shape::default().commands("d", None).is_empty());
    }

    #[test]
    fn stats_from_tc_json() {
        let one = r#"[{"kind":"tbf","handle":"8002:","root":true,"refcnt":3,"options":{"rate":2000000,"burst":6054,"lat":100001},"bytes":1500,"packets":3,"drops":1,"overlimits":7,"requeues":0,"backlog":0,"qlen":0}]"#;
        assert_eq!(
            parse_stats(one),
            Some(QdiscStats {
                bytes: 1500,
                packets: 3,
                drops: 1,
                overlimits: 7,
                requeues: 0
            })
        );
        let two = r#"[{"kind":"netem","handle":"1:","root":true,"bytes":10,"packets":1,"drops":2,"overlimits":0,"requeues":0},{"kind":"tbf","handle":"10:","parent":"1:1","bytes":10,"packets":1,"drops":3,"overlimits":4,"requeues":0}]"#;
        let s = parse_stats(two).unwrap();
        assert_eq!((s.bytes, s.drops, s.overlimits), (10, 5, 4));
        assert_eq!(parse_stats("[]"), None);
        assert_eq!(parse_stats("not json"), None);
        assert!(is_unknown_qdisc(
            "Error: Specified qdisc kind is unknown.\n"
        ));
    }
}
