//! A generator's own link: the bytes each network interface moved over a run
//! (`/proc/net/dev`, which follows the network namespace, unlike `/sys/class/net` under
//! `nsenter --net`), the busiest one taken for the link the load went through, and what it
//! can carry: a `tbf` qdisc's rate on it (`tc -j qdisc show`), else the NIC's speed. A link
//! that carried nine tenths of what it can, or whose own qdisc dropped packets this host
//! sent (it was offered more than it carries: TCP then backs off, and the link looks less
//! busy than it was), was the load's limit, not the server.
//!
//! Pure parsers, table-tested; the two readings ([`snapshot`], [`limit_of`]) are thin.

use loadlab_result::LinkUse;
use std::collections::BTreeMap;
use std::time::Duration;

/// A link that carried this share of its limit in either direction was saturated.
pub const SATURATED_SHARE: f64 = 0.9;

/// Bytes received and sent per interface (loopback left out), and the packets each one's
/// root qdisc dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NicSnapshot {
    pub bytes: BTreeMap<String, (u64, u64)>,
    pub drops: BTreeMap<String, u64>,
}

/// Reads `/proc/net/dev` and `tc -s qdisc` of this thread's network namespace.
pub fn snapshot() -> NicSnapshot {
    let mut s = parse_proc_net_dev(&std::fs::read_to_string("/proc/net/dev").unwrap_or_default());
    s.drops = std::process::Command::new("tc")
        .args(["-s", "-j", "qdisc", "show"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| qdisc_drops(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or_default();
    s
}

/// Packets each interface's root qdisc dropped, from `tc -s -j qdisc show`.
pub fn qdisc_drops(json: &str) -> BTreeMap<String, u64> {
    let Ok(serde_json::Value::Array(qdiscs)) = serde_json::from_str(json) else {
        return BTreeMap::new();
    };
    qdiscs
        .iter()
        .filter(|q| q["root"] == true)
        .filter_map(|q| Some((q["dev"].as_str()?.to_string(), q["drops"].as_u64()?)))
        .collect()
}

/// `/proc/net/dev`'s text: `IF: rx_bytes packets ... tx_bytes ...` after two header lines.
pub fn parse_proc_net_dev(text: &str) -> NicSnapshot {
    let mut bytes = BTreeMap::new();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name == "lo" {
            continue;
        }
        let fields: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if fields.len() >= 9 {
            bytes.insert(name.to_string(), (fields[0], fields[8]));
        }
    }
    NicSnapshot {
        bytes,
        drops: BTreeMap::new(),
    }
}

/// What an interface can carry, bits per second, and how that is known: the rate of a
/// `tbf` qdisc at its root, else its NIC speed. `None`: not known.
pub fn limit_of(interface: &str) -> Option<(f64, String)> {
    let tc = std::process::Command::new("tc")
        .args(["-j", "qdisc", "show", "dev", interface])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| tbf_rate_bits(&String::from_utf8_lossy(&o.stdout)));
    if let Some(bits) = tc {
        return Some((bits, "tbf qdisc".into()));
    }
    let speed: f64 = std::fs::read_to_string(format!("/sys/class/net/{interface}/speed"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (speed > 0.0).then(|| (speed * 1e6, "NIC speed".to_string()))
}

/// The rate of a root `tbf` qdisc in `tc -j qdisc show` output, bits per second (tc says
/// bytes per second).
pub fn tbf_rate_bits(json: &str) -> Option<f64> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value.as_array()?.iter().find_map(|q| {
        (q["kind"] == "tbf" && q["root"] == true)
            .then(|| q["options"]["rate"].as_f64())
            .flatten()
            .map(|bytes| bytes * 8.0)
    })
}

/// The interface that moved the most bytes between `before` and `after` (over `elapsed`),
/// with what it can carry (`limit`, looked up by name) and whether it was saturated.
pub fn busiest(
    before: &NicSnapshot,
    after: &NicSnapshot,
    elapsed: Duration,
    limit: impl Fn(&str) -> Option<(f64, String)>,
) -> Option<LinkUse> {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let (name, rx, tx) = after
        .bytes
        .iter()
        .filter_map(|(name, (rx, tx))| {
            let (rx0, tx0) = before.bytes.get(name).copied().unwrap_or((*rx, *tx));
            Some((name.clone(), rx.checked_sub(rx0)?, tx.checked_sub(tx0)?))
        })
        .max_by_key(|(_, rx, tx)| rx + tx)?;
    if rx + tx == 0 {
        return None;
    }
    let received = rx as f64 * 8.0 / secs;
    let sent = tx as f64 * 8.0 / secs;
    let (limit_bits_per_s, limit_source) = match limit(&name) {
        Some((bits, how)) => (Some(bits), Some(how)),
        None => (None, None),
    };
    let dropped = after
        .drops
        .get(&name)
        .zip(before.drops.get(&name))
        .map_or(0, |(a, b)| a.saturating_sub(*b));
    let saturated =
        limit_bits_per_s.is_some_and(|l| received.max(sent) >= l * SATURATED_SHARE || dropped > 0);
    Some(LinkUse {
        dropped_packets: dropped,
        interface: name,
        received_bits_per_s: received,
        sent_bits_per_s: sent,
        limit_bits_per_s,
        limit_source,
        saturated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 5000 50 0 0 0 0 0 0 5000 50 0 0 0 0 0 0
  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0
  eth1:  300  3 0 0 0 0 0 0  400  4 0 0 0 0 0 0
";

    #[test]
    fn proc_net_dev_is_read_without_loopback() {
        let s = parse_proc_net_dev(DEV);
        assert_eq!(s.bytes.len(), 2);
        assert_eq!(s.bytes["eth0"], (1000, 2000));
        assert_eq!(s.bytes["eth1"], (300, 400));
    }

    #[test]
    fn a_tbf_rate_is_read_in_bits() {
        let json = r#"[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":1500000,"burst":16383,"lat":50000}}]"#;
        assert_eq!(tbf_rate_bits(json), Some(12_000_000.0));
        assert_eq!(
            tbf_rate_bits(r#"[{"kind":"noqueue","root":true,"options":{}}]"#),
            None
        );
        assert_eq!(tbf_rate_bits("not json"), None);
    }

    #[test]
    fn the_busiest_link_and_whether_it_was_saturated() {
        let before = parse_proc_net_dev(DEV);
        let mut after = before.clone();
        // eth0 sent 1.4 MB in 1 s: 11.2 Mbit/s of a 12 Mbit/s tbf, 93%: saturated.
        after
            .bytes
            .insert("eth0".into(), (1000 + 100_000, 2000 + 1_400_000));
        after.bytes.insert("eth1".into(), (300 + 10, 400 + 10));
        let tbf = |n: &str| (n == "eth0").then(|| (12e6, "tbf qdisc".to_string()));
        let link = busiest(&before, &after, Duration::from_secs(1), tbf).unwrap();
        assert_eq!(link.interface, "eth0");
        assert!((link.sent_bits_per_s - 11.2e6).abs() < 1.0);
        assert!(link.saturated);
        // Half the rate: not saturated; no known limit: never.
        after.bytes.insert("eth0".into(), (1000, 2000 + 750_000));
        assert!(
            !busiest(&before, &after, Duration::from_secs(1), tbf)
                .unwrap()
                .saturated
        );
        let none = busiest(&before, &after, Duration::from_secs(1), |_| None).unwrap();
        assert!(!none.saturated && none.limit_bits_per_s.is_none());
        assert!(busiest(&before, &before, Duration::from_secs(1), tbf).is_none());
        // Half the rate, but its own shaper dropped what it was offered: saturated.
        let mut dropping = after.clone();
        dropping.drops.insert("eth0".into(), 40);
        let mut before_drops = before.clone();
        before_drops.drops.insert("eth0".into(), 2);
        let link = busiest(&before_drops, &dropping, Duration::from_secs(1), tbf).unwrap();
        assert!(link.saturated && link.dropped_packets == 38);
    }

    #[test]
    fn qdisc_drops_are_read_per_device() {
        let json = r#"[{"kind":"noqueue","dev":"vb","root":true,"drops":0},{"kind":"tbf","dev":"va","root":true,"options":{"rate":1500000},"drops":17},{"kind":"fq","dev":"va","root":false,"drops":5}]"#;
        let drops = qdisc_drops(json);
        assert_eq!(drops["va"], 17);
        assert_eq!(drops["vb"], 0);
        assert!(qdisc_drops("[]").is_empty());
    }
}
