//! A result in a framed block, for transports that carry only text lines (container logs):
//!
//! ```text
//! -----BEGIN LOADLAB RESULT shard 2/3-----
//! eyJzY2hlbWFfdmVyc2lvbiI6MSwi...   (the JSON, base64, 76 characters a line)
//! -----END LOADLAB RESULT-----
//! ```
//!
//! Base64 in short lines because container runtimes split long log lines (at 16 KiB) and
//! some log pipelines re-wrap or prefix them; a frame survives anything that keeps lines.
//! Reading is forgiving about what surrounds a frame (the human summary, kubectl's
//! `--prefix`, timestamps) and exact about what is inside it.

use base64::Engine as _;
use loadlab_result::RunResult;

const BEGIN: &str = "-----BEGIN LOADLAB RESULT";
const END: &str = "-----END LOADLAB RESULT-----";
const LINE: usize = 76;

/// The framed block of `result` (its JSON), naming its shard when it has one.
pub fn frame(result: &RunResult) -> String {
    let json = serde_json::to_vec(result).expect("a result always serialises");
    let b64 = base64::engine::general_purpose::STANDARD.encode(json);
    let label = result
        .shard
        .as_ref()
        .map_or(String::new(), |s| format!(" shard {}/{}", s.index, s.count));
    let mut out = format!("{BEGIN}{label}-----\n");
    for chunk in b64.as_bytes().chunks(LINE) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(END);
    out.push('\n');
    out
}

/// One frame found in a log.
#[derive(Debug)]
pub struct Found {
    /// The line number (from 1) where it began.
    pub line: usize,
    /// `shard I/N` from its first line, when given.
    pub shard: Option<(u32, u32)>,
    /// The result, or why it did not read (cut short, not base64, not a result).
    pub result: Result<RunResult, String>,
}

/// Every frame in `log`, in order. Text before a frame's marker on the same line (a prefix
/// such as `[pod/x/loadlab] ` or a timestamp) is ignored, and so is the same prefix on the
/// lines inside it.
pub fn read_frames(log: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut lines = log.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(at) = line.find(BEGIN) else {
            continue;
        };
        let prefix = &line[..at];
        let label = line[at + BEGIN.len()..].trim_end_matches('-').trim();
        let shard = label
            .strip_prefix("shard ")
            .and_then(|s| s.split_once('/'))
            .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)));
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            let inner = inner.strip_prefix(prefix).unwrap_or(inner).trim();
            if inner.ends_with(END) {
                closed = true;
                break;
            }
            body.push_str(inner);
        }
        let result = if !closed {
            Err("the block was cut short (no END line): the shard stopped while printing".into())
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(body.as_bytes())
                .map_err(|e| format!("the block is not base64 ({e})"))
                .and_then(|bytes| {
                    serde_json::from_slice::<RunResult>(&bytes)
                        .map_err(|e| format!("the block is not a loadlab result ({e})"))
                })
        };
        found.push(Found {
            line: n + 1,
            shard,
            result,
        });
    }
    found
}
