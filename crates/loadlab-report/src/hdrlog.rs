//! HdrHistogram interval log: one response-time histogram per interval, in the text format
//! HdrHistogram's own tools (HistogramLogProcessor, HdrHistogram plotters) read. Values are
//! recorded in nanoseconds; `Interval_Max` is printed in milliseconds. Warm-up intervals are
//! tagged `warmup`, which those tools leave out unless asked for that tag.

use crate::Exporter;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use loadlab_result::decode_histogram;
use loadlab_result::RunResult;
use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

pub struct HdrLogExporter;

const NS_PER_MS: f64 = 1_000_000.0;

impl Exporter for HdrLogExporter {
    fn name(&self) -> &'static str {
        "hdr-log"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        // The log writer wants a sized writer; `&mut dyn Write` is one.
        let mut out = out;
        let start = humantime::parse_rfc3339(&result.started_at).unwrap_or(UNIX_EPOCH);
        let epoch = start.duration_since(UNIX_EPOCH).unwrap_or_default();
        writeln!(
            out,
            "#[Histogram log written by loadlab {}: response times of {} {}, recorded in nanoseconds]",
            result.loadlab_version, result.target.method, result.target.url
        )?;
        writeln!(
            out,
            "#[StartTime: {:.3} (seconds since epoch), {}]",
            epoch.as_secs_f64(),
            result.started_at
        )?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        let mut serializer = V2DeflateSerializer::new();
        let mut log = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(NS_PER_MS)
            .begin_log_with(&mut out, &mut serializer)?;
        let warmup = Tag::new("warmup");
        for interval in &result.timeline {
            let Some(encoded) = &interval.histogram else {
                continue;
            };
            let h = decode_histogram(encoded).map_err(io::Error::other)?;
            log.write_histogram(
                &h,
                Duration::from_secs_f64(interval.start_s),
                Duration::from_secs_f64(interval.duration_s),
                if interval.warmup { warmup } else { None },
            )
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
        Ok(())
    }
}
