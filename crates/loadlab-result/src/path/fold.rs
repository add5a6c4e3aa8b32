//! Many sample windows folded into one, so that a long run keeps one window per timeline
//! interval instead of ten a second (a day's run held 864,000 windows, about 130 MB, and
//! joining them into intervals went over every window for every interval). A folded window
//! carries what [`super::intervals`] needs to join it exactly as it would have joined the
//! windows it holds: sums stay sums, highest and lowest stay so, and each mean over windows
//! keeps how many windows it is of.

use super::PathWindow;
use serde::{Deserialize, Serialize};

/// What a folded window keeps beyond a window's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Folded {
    /// The windows folded.
    pub windows: u32,
    /// Their socket-time (connections over each window's length), seconds.
    pub socket_s: f64,
    /// Of them, how many had a round trip, a receiver-side round trip, a delivery rate: the
    /// weights of the folded window's means.
    pub rtt: u32,
    pub rcv_rtt: u32,
    pub delivery: u32,
}

/// `windows` (in order, none of them empty of time) as one window ending at `t_s`: what
/// [`super::intervals`] makes of it is what it makes of them, for an interval that holds
/// them all (delivery rates to the byte per second).
pub fn fold(windows: &[PathWindow], t_s: f64) -> PathWindow {
    let count = |value: fn(&PathWindow) -> Option<f64>, of: fn(&Folded) -> u32| -> f64 {
        windows.iter().map(|w| w.weight(value(w), of)).sum()
    };
    // The mean over the windows that have the figure, each weighed as intervals() weighs it.
    let mean = |value: fn(&PathWindow) -> Option<f64>, of: fn(&Folded) -> u32| {
        let n = count(value, of);
        (n > 0.0).then(|| {
            windows
                .iter()
                .map(|w| value(w).unwrap_or(0.0) * w.weight(value(w), of))
                .sum::<f64>()
                / n
        })
    };
    let sum = |value: fn(&PathWindow) -> Option<u64>| -> Option<u64> {
        windows.iter().filter_map(value).reduce(|a, b| a + b)
    };
    let rtt = |w: &PathWindow| w.rtt_us;
    let rcv_rtt = |w: &PathWindow| w.rcv_rtt_us;
    let delivery = |w: &PathWindow| w.delivery_rate.map(|r| r as f64);
    PathWindow {
        t_s,
        dt_s: windows.iter().map(|w| w.dt_s).sum(),
        sockets: windows.iter().map(|w| w.sockets).max().unwrap_or(0),
        received_bytes: windows.iter().map(|w| w.received_bytes).sum(),
        acked_bytes: windows.iter().map(|w| w.acked_bytes).sum(),
        rtt_us: mean(rtt, |f| f.rtt),
        min_rtt_us: windows
            .iter()
            .filter_map(|w| w.min_rtt_us)
            .min_by(f64::total_cmp),
        rcv_rtt_us: mean(rcv_rtt, |f| f.rcv_rtt),
        busy_us: sum(|w| w.busy_us),
        rwnd_limited_us: sum(|w| w.rwnd_limited_us),
        sndbuf_limited_us: sum(|w| w.sndbuf_limited_us),
        notsent_bytes: windows.iter().filter_map(|w| w.notsent_bytes).max(),
        send_queue_bytes: windows
            .iter()
            .map(|w| w.send_queue_bytes)
            .max()
            .unwrap_or(0),
        delivery_rate: mean(delivery, |f| f.delivery).map(|r| r.round() as u64),
        folded: Some(Folded {
            windows: windows
                .iter()
                .map(|w| w.folded.map_or(1, |f| f.windows))
                .sum(),
            socket_s: windows.iter().map(PathWindow::socket_s).sum(),
            rtt: count(rtt, |f| f.rtt) as u32,
            rcv_rtt: count(rcv_rtt, |f| f.rcv_rtt) as u32,
            delivery: count(delivery, |f| f.delivery) as u32,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::intervals;
    use super::*;

    /// Windows of 100 ms over 3 s, with figures that differ window to window and are
    /// sometimes absent (no connection at the sample).
    fn windows() -> Vec<PathWindow> {
        (1..=30u32)
            .map(|i| {
                let some = i % 7 != 0;
                PathWindow {
                    t_s: f64::from(i) * 0.1,
                    dt_s: 0.1,
                    sockets: if some { i % 4 + 1 } else { 0 },
                    received_bytes: 1_000 * u64::from(i),
                    acked_bytes: 10 * u64::from(i),
                    rtt_us: some.then(|| 100.0 + f64::from(i * 13 % 17)),
                    min_rtt_us: some.then(|| 50.0 + f64::from(i % 5)),
                    rcv_rtt_us: (i % 3 != 0).then(|| 200.0 + f64::from(i)),
                    busy_us: some.then(|| 40_000 + u64::from(i) * 100),
                    rwnd_limited_us: some.then(|| u64::from(i) * 10),
                    sndbuf_limited_us: some.then_some(0),
                    notsent_bytes: some.then(|| u64::from(i * 31 % 11)),
                    send_queue_bytes: u64::from(i * 7 % 13),
                    delivery_rate: some.then(|| 1_000_000 + u64::from(i) * 1_000),
                    folded: None,
                }
            })
            .collect()
    }

    #[test]
    fn intervals_of_folded_windows_are_the_intervals_of_the_windows() {
        let raw = windows();
        let timeline = [(0.0, 1.0, true), (1.0, 1.0, false), (2.0, 1.0, false)];
        // Each interval's windows folded into one at its end; then folded twice over.
        let once: Vec<PathWindow> = raw
            .chunks(10)
            .enumerate()
            .map(|(k, c)| fold(c, (k + 1) as f64))
            .collect();
        let twice: Vec<PathWindow> = raw
            .chunks(10)
            .enumerate()
            .map(|(k, c)| {
                let halves = [fold(&c[..4], 0.0), fold(&c[4..], 0.0)];
                fold(&halves, (k + 1) as f64)
            })
            .collect();
        let want = intervals(&raw, &timeline);
        for folded in [&once, &twice] {
            let got = intervals(folded, &timeline);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
                    (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    (a, b) => a == b,
                };
                assert!(close(g.rtt_us, w.rtt_us), "{g:?}\n{w:?}");
                assert!(close(g.rcv_rtt_us, w.rcv_rtt_us), "{g:?}\n{w:?}");
                assert!(close(g.busy_share, w.busy_share), "{g:?}\n{w:?}");
                assert!(close(g.network_limited_share, w.network_limited_share));
                // A delivery rate's mean is kept to the byte per second.
                let (gd, wd) = (
                    g.delivery_rate_per_s.unwrap(),
                    w.delivery_rate_per_s.unwrap(),
                );
                assert!((gd - wd).abs() <= 1.0, "{gd} {wd}");
                assert_eq!(
                    (g.sockets, g.min_rtt_us, g.notsent_bytes, g.send_queue_bytes),
                    (w.sockets, w.min_rtt_us, w.notsent_bytes, w.send_queue_bytes)
                );
                assert!((g.received_per_s - w.received_per_s).abs() < 1e-6);
                assert!((g.acked_per_s - w.acked_per_s).abs() < 1e-6);
            }
        }
        assert_eq!(once[0].folded.unwrap().windows, 10);
        assert_eq!(twice[2].folded.unwrap().windows, 10);
    }
}
