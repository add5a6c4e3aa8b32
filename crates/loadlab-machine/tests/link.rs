//! The link for real: a namespace, a veth pair, tbf on both ends, a calibration through it,
//! and nothing left after. Needs root and iproute2 (else SKIPPED). Traffic stays between
//! this process and the namespace the test made.

use loadlab_machine::{Link, LinkSpec, Rate};
use std::path::Path;

/// Whether this machine can run the test; prints SKIPPED when not.
fn can_shape(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = ["ip", "tc"]
        .iter()
        .all(|t| std::process::Command::new(t).arg("-V").output().is_ok());
    if !(root && tools) {
        eprintln!("SKIPPED {test}: needs root and iproute2's ip and tc");
    }
    root && tools
}

#[test]
fn a_capped_link_calibrates_to_its_rate_and_leaves_nothing() {
    if !can_shape("a_capped_link_calibrates_to_its_rate_and_leaves_nothing") {
        return;
    }
    let rate = Rate::parse("2MBps").unwrap();
    let mut link = Link::create(LinkSpec {
        up: Some(rate),
        down: Some(rate),
        ..LinkSpec::default()
    })
    .expect("a link");
    let ns = link.netns().to_string();
    assert!(Path::new("/run/netns").join(&ns).exists());
    let [up, down] = link.calibrate().expect("calibrated");
    let report = link.report(link.stats());
    eprintln!("{}", link.describe());
    for c in [up.unwrap(), down.unwrap()] {
        // The cap counts frames on the wire: within 5% of it. TCP's payload is the frames
        // less 66 bytes of headers per 1,514: about 4.4% less.
        let wire = c.wire_bytes_per_s / rate.bytes_per_s;
        assert!((0.95..1.05).contains(&wire), "{c:?}");
        let payload = c.payload_bytes_per_s / rate.bytes_per_s;
        assert!((0.90..1.01).contains(&payload), "{c:?}");
    }
    let up = report.up.unwrap();
    assert!(up.qdisc.starts_with("tbf rate 2000000 B/s"), "{up:?}");
    assert!(up.qdisc_stats.bytes > 500_000, "{up:?}");
    let dev = up.device.clone();
    drop(link);
    assert!(!Path::new("/run/netns").join(&ns).exists(), "{ns} is left");
    assert!(
        !Path::new("/sys/class/net").join(&dev).exists(),
        "{dev} is left"
    );
}
