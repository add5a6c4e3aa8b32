//! libFuzzer target for the spill-file reader `loadlab recover` uses
//! (`loadlab_session::spill`): the bytes read as a spill file (magic line, header, then
//! intervals, each `LEN JSON`), the intervals pushed into a recovery as `recover` does, and
//! the partial result finished and written as JSON. Whatever a corrupt or hostile file
//! holds, nothing may panic (issue 46 item 7: `start_s: 1e308` did): an unreadable record
//! ends the file or is an error, and a result that is recovered says it was interrupted.

#![no_main]

use libfuzzer_sys::fuzz_target;
use loadlab_session::spill::recover::Recovery;
use loadlab_session::spill::SpillReader;
use std::path::Path;

fuzz_target!(|input: &[u8]| {
    let path = Path::new("fuzz.spill");
    let Ok(mut reader) = SpillReader::new(input, path) else {
        return;
    };
    let Ok(header) = reader.header() else {
        return;
    };
    // As `loadlab recover` (every interval kept) and as the store's recovery (coarsened to
    // the count it was told), from one reading.
    let mut all = Recovery::new(None);
    let mut intervals = Vec::new();
    loop {
        match reader.next_interval() {
            Ok(Some(iv)) => intervals.push(iv),
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let mut counted = Recovery::new(Some(intervals.len() as u64));
    for iv in &intervals {
        if all.push(iv.clone()).is_err() {
            return;
        }
        let _ = counted.push(iv.clone());
    }
    let Ok(result) = all.finish(header.clone(), "fuzz.spill", "") else {
        return;
    };
    assert!(result.interrupted);
    let _ = serde_json::to_string(&result);
    let _ = counted.finish(header, "fuzz.spill", "");
});
