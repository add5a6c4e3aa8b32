//! The path watch's folded windows (one per finished timeline interval) kept out of memory
//! (issue 55: memory flat over a day-long soak). In a vector they took 208 bytes an
//! interval per side, to the run's end (36 MB a day for both sides); here each is written as
//! a fixed record of its bits to an anonymous file in the temporary directory (`O_TMPFILE`,
//! as the server's samples are: nothing is left behind however loadlab ends), and read back
//! once, when the run ends, folded again into the spans of the timeline the result shows
//! (merged past an hour: `PathWatch::finish_grouped`), so that the end holds what an hour's
//! run does. Without such a file the records stay in memory, still smaller than the windows.
//!
//! Records hold the exact bits of every figure: what is read back is what was written.

use loadlab_result::path::{Folded, PathWindow};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

/// Encoded bytes held before they are written to the file.
const FLUSH_AT: usize = 16 << 10;

/// The numbers of a record, after its two bytes saying which optional figures it has.
const FIELDS: usize = 19;
const RECORD: usize = 2 + 8 * FIELDS;

#[derive(Debug)]
pub(super) struct Spool {
    file: Option<File>,
    /// Encoded, not yet in the file (all of it, when there is no file to take it).
    buf: Vec<u8>,
    written: u64,
    count: usize,
}

impl Spool {
    /// A spool backed by an anonymous file, or by memory when none can be made.
    pub fn new() -> Spool {
        Spool::with_file(loadlab_probe::sample_log::anonymous_file())
    }

    fn with_file(file: Option<File>) -> Spool {
        Spool {
            file,
            buf: Vec::new(),
            written: 0,
            count: 0,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn push(&mut self, w: &PathWindow) {
        encode(w, &mut self.buf);
        self.count += 1;
        if self.buf.len() >= FLUSH_AT {
            if let Some(file) = &mut self.file {
                // A write that fails (a full disk) keeps the bytes here: nothing is lost.
                if file.write_all(&self.buf).is_ok() {
                    self.written += self.buf.len() as u64;
                    self.buf.clear();
                } else {
                    self.file = None;
                }
            }
        }
    }

    /// Every window pushed, in order, one at a time.
    pub fn drain(self, mut each: impl FnMut(PathWindow)) {
        let mut record = [0u8; RECORD];
        if let Some(mut file) = self.file.filter(|_| self.written > 0) {
            if file.seek(SeekFrom::Start(0)).is_ok() {
                let mut reader = BufReader::new(file.take(self.written));
                while reader.read_exact(&mut record).is_ok() {
                    each(decode(&record));
                }
            }
        }
        for chunk in self.buf.chunks_exact(RECORD) {
            record.copy_from_slice(chunk);
            each(decode(&record));
        }
    }
}

fn encode(w: &PathWindow, out: &mut Vec<u8>) {
    let f = w.folded.unwrap_or_default();
    let opt_f = |v: Option<f64>| v.map(f64::to_bits);
    let options = [
        opt_f(w.rtt_us),
        opt_f(w.min_rtt_us),
        opt_f(w.rcv_rtt_us),
        w.busy_us,
        w.rwnd_limited_us,
        w.sndbuf_limited_us,
        w.notsent_bytes,
        w.delivery_rate,
        w.folded.map(|_| u64::from(f.windows)),
    ];
    let mask = options
        .iter()
        .enumerate()
        .fold(0u16, |m, (i, o)| m | (u16::from(o.is_some()) << i));
    let fields: [u64; FIELDS] = [
        w.t_s.to_bits(),
        w.dt_s.to_bits(),
        u64::from(w.sockets),
        w.received_bytes,
        w.acked_bytes,
        w.send_queue_bytes,
        f.socket_s.to_bits(),
        u64::from(f.rtt),
        u64::from(f.rcv_rtt),
        u64::from(f.delivery),
    ]
    .into_iter()
    .chain(options.iter().map(|o| o.unwrap_or(0)))
    .collect::<Vec<_>>()
    .try_into()
    .expect("19 fields");
    out.extend_from_slice(&mask.to_le_bytes());
    fields
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

fn decode(record: &[u8; RECORD]) -> PathWindow {
    let mask = u16::from_le_bytes([record[0], record[1]]);
    let n =
        |i: usize| u64::from_le_bytes(record[2 + 8 * i..10 + 8 * i].try_into().expect("8 bytes"));
    let opt = |i: usize| (mask & (1 << i) != 0).then(|| n(10 + i));
    let opt_f = |i: usize| opt(i).map(f64::from_bits);
    PathWindow {
        t_s: f64::from_bits(n(0)),
        dt_s: f64::from_bits(n(1)),
        sockets: n(2) as u32,
        received_bytes: n(3),
        acked_bytes: n(4),
        send_queue_bytes: n(5),
        rtt_us: opt_f(0),
        min_rtt_us: opt_f(1),
        rcv_rtt_us: opt_f(2),
        busy_us: opt(3),
        rwnd_limited_us: opt(4),
        sndbuf_limited_us: opt(5),
        notsent_bytes: opt(6),
        delivery_rate: opt(7),
        folded: opt(8).map(|windows| Folded {
            windows: windows as u32,
            socket_s: f64::from_bits(n(6)),
            rtt: n(7) as u32,
            rcv_rtt: n(8) as u32,
            delivery: n(9) as u32,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(i: u32) -> PathWindow {
        let some = !i.is_multiple_of(3);
        PathWindow {
            t_s: f64::from(i) * 0.1 + 1e-7,
            dt_s: 0.1,
            sockets: i % 5,
            received_bytes: 1_000 * u64::from(i),
            acked_bytes: u64::from(i),
            rtt_us: some.then(|| 100.0 / 3.0 + f64::from(i)),
            min_rtt_us: some.then_some(12.5),
            rcv_rtt_us: i.is_multiple_of(2).then_some(0.1),
            busy_us: some.then_some(7),
            rwnd_limited_us: Some(u64::MAX),
            sndbuf_limited_us: None,
            notsent_bytes: some.then_some(0),
            send_queue_bytes: 3,
            delivery_rate: some.then(|| u64::from(i) << 20),
            folded: i.is_multiple_of(4).then(|| Folded {
                windows: i,
                socket_s: 1.0 / 7.0,
                rtt: 2,
                rcv_rtt: 0,
                delivery: i,
            }),
        }
    }

    /// Through the file (past several flushes) and through memory alike, every window comes
    /// back to the bit, in order.
    #[test]
    fn windows_come_back_as_they_went_in() {
        let want: Vec<PathWindow> = (0..300).map(window).collect();
        for spool in [Spool::new(), Spool::with_file(None)] {
            let mut spool = spool;
            want.iter().for_each(|w| spool.push(w));
            assert_eq!(spool.len(), 300);
            let mut got = Vec::new();
            spool.drain(|w| got.push(w));
            assert_eq!(got, want);
        }
        const { assert!(300 * RECORD > FLUSH_AT, "the test goes through the file") };
    }
}
