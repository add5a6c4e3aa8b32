//! The samples a run keeps for its end-of-run report, in little memory (issue 55: memory
//! flat over a day-long soak). Each sample is written as it is taken, as the varint
//! differences of its fields from the sample before (about 25 bytes, against the 144 of a
//! [`Sample`] in a vector that doubles), to an anonymous file in the temporary directory
//! (`O_TMPFILE`: it has no name, so nothing is left behind however loadlab ends), and read
//! back whole when the run ends.
//!
//! Why every sample and not one folded window per interval, as the path's windows are: the
//! report's summary gives the p50 and p99 of 100 ms windows (CPU, RSS, memory, bytes sent,
//! loadlab's CPU) and the median window length, which only every window gives exactly. The
//! report is made from the very samples the sampler took, so every figure of it is what it
//! was when they were kept in memory. Without such a file (a temporary directory that
//! refuses one, or a full disk), the encoded bytes stay in memory, a sixth of the samples.

use crate::cgroup::Throttling;
use crate::sampler::Sample;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

/// Encoded bytes held before they are written to the file (a few minutes of samples).
const FLUSH_AT: usize = 16 << 10;

/// A sample's fields as numbers, in the order they are encoded.
const FIELDS: usize = 13;

/// Which optional fields a sample has (one byte before its fields).
const THROTTLING: u8 = 1;
const MEMORY: u8 = 2;
const SENT: u8 = 4;
const OOM: u8 = 8;

/// The samples of a run, encoded as they come.
#[derive(Debug)]
pub struct SampleLog {
    /// The first sample's instant: each `at` is kept as nanoseconds from it.
    base: Option<Instant>,
    /// The previous sample's fields (an absent optional field keeps the value before).
    prev: [u64; FIELDS],
    /// Encoded, not yet in the file.
    buf: Vec<u8>,
    /// The anonymous file, how many bytes of it are the log's, and whether it takes more.
    file: Option<File>,
    written: u64,
    writable: bool,
    count: usize,
    /// Nothing is kept (a sampler whose samples only stream, such as the agent's).
    off: bool,
}

impl SampleLog {
    /// A log backed by an anonymous file in the temporary directory, or by memory when no
    /// such file can be made.
    pub fn new() -> SampleLog {
        SampleLog {
            file: anonymous_file(),
            ..SampleLog::in_memory()
        }
    }

    /// A log kept in memory, encoded.
    pub fn in_memory() -> SampleLog {
        SampleLog {
            base: None,
            prev: [0; FIELDS],
            buf: Vec::new(),
            file: None,
            written: 0,
            writable: true,
            count: 0,
            off: false,
        }
    }

    /// A log that keeps nothing.
    pub fn off() -> SampleLog {
        SampleLog {
            off: true,
            ..SampleLog::in_memory()
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of samples held in memory (not yet written, or kept for want of a file).
    pub fn held_bytes(&self) -> usize {
        self.buf.len()
    }

    pub fn push(&mut self, s: &Sample) {
        if self.off {
            return;
        }
        let base = *self.base.get_or_insert(s.at);
        let at = if s.at >= base {
            (s.at - base).as_nanos() as i64
        } else {
            -((base - s.at).as_nanos() as i64)
        };
        let t = s.throttling.unwrap_or_default();
        let p = &self.prev;
        let fields: [u64; FIELDS] = [
            at as u64,
            s.cpu_ns,
            s.throttling.map_or(p[2], |_| t.periods),
            s.throttling.map_or(p[3], |_| t.throttled),
            s.throttling.map_or(p[4], |_| t.throttled_ns),
            s.rss_bytes,
            s.memory_bytes.unwrap_or(p[6]),
            s.threads,
            s.fds,
            s.generator_cpu_ns,
            s.processes,
            s.sent_bytes.unwrap_or(p[11]),
            s.oom_kills.unwrap_or(p[12]),
        ];
        let flags = [
            (s.throttling.is_some(), THROTTLING),
            (s.memory_bytes.is_some(), MEMORY),
            (s.sent_bytes.is_some(), SENT),
            (s.oom_kills.is_some(), OOM),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |a, (_, bit)| a | bit);
        self.buf.push(flags);
        for (value, prev) in fields.iter().zip(&self.prev) {
            // Wrapping, so that any two values (a counter that fell: a PID reused) round-trip.
            put_varint(&mut self.buf, zigzag(value.wrapping_sub(*prev) as i64));
        }
        self.prev = fields;
        self.count += 1;
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Writes what is held to the file; on a failure (a full disk) the file takes no more
    /// (what it holds is still read back first) and the log goes on in memory.
    fn flush(&mut self) {
        let Some(file) = self.file.as_mut().filter(|_| self.writable) else {
            return;
        };
        let ok =
            file.seek(SeekFrom::Start(self.written)).is_ok() && file.write_all(&self.buf).is_ok();
        if ok {
            self.written += self.buf.len() as u64;
            self.buf.clear();
        } else {
            self.writable = false;
        }
    }

    /// Every sample, in order, as it was pushed.
    pub fn samples(mut self) -> Vec<Sample> {
        let mut out = Vec::with_capacity(self.count);
        let Some(base) = self.base else {
            return out;
        };
        let from_file: Box<dyn Read> = match self.file.take() {
            Some(mut f) if self.written > 0 => {
                if f.seek(SeekFrom::Start(0)).is_err() {
                    return out;
                }
                Box::new(f.take(self.written))
            }
            _ => Box::new(std::io::empty()),
        };
        let mut bytes = BufReader::new(from_file.chain(&self.buf[..]))
            .bytes()
            .map_while(Result::ok);
        let mut prev = [0u64; FIELDS];
        for _ in 0..self.count {
            let Some(flags) = bytes.next() else { break };
            let mut fields = [0u64; FIELDS];
            for (field, p) in fields.iter_mut().zip(&prev) {
                let Some(delta) = get_varint(&mut bytes) else {
                    return out;
                };
                *field = p.wrapping_add(unzigzag(delta) as u64);
            }
            let at = fields[0] as i64;
            let at = if at >= 0 {
                base + Duration::from_nanos(at as u64)
            } else {
                base - Duration::from_nanos(at.unsigned_abs())
            };
            let has = |bit: u8| flags & bit != 0;
            out.push(Sample {
                at,
                cpu_ns: fields[1],
                throttling: has(THROTTLING).then_some(Throttling {
                    periods: fields[2],
                    throttled: fields[3],
                    throttled_ns: fields[4],
                }),
                rss_bytes: fields[5],
                memory_bytes: has(MEMORY).then_some(fields[6]),
                threads: fields[7],
                fds: fields[8],
                generator_cpu_ns: fields[9],
                processes: fields[10],
                sent_bytes: has(SENT).then_some(fields[11]),
                oom_kills: has(OOM).then_some(fields[12]),
            });
            prev = fields;
        }
        out
    }
}

impl Default for SampleLog {
    fn default() -> SampleLog {
        SampleLog::in_memory()
    }
}

/// A file with no name in the temporary directory, gone when closed (also the path
/// watches' spool of folded windows, `loadlab-machine`).
#[cfg(target_os = "linux")]
pub fn anonymous_file() -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(std::env::temp_dir())
        .ok()
}

#[cfg(not(target_os = "linux"))]
pub fn anonymous_file() -> Option<File> {
    None
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &mut impl Iterator<Item = u8>) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = bytes.next()?;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
#[path = "sample_log_tests.rs"]
mod tests;
