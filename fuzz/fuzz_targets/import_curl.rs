//! libFuzzer target for the curl importer (`loadlab_import::curl::import`) on any command
//! line: nothing may panic, and what it imports must be a file the scenario loader reads as
//! the format (see `common/imported.rs`).

#![no_main]

#[path = "common/imported.rs"]
mod imported;

use libfuzzer_sys::fuzz_target;
use loadlab_import::curl;

fuzz_target!(|input: &[u8]| {
    let Ok(command) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(done) = curl::import(command, &curl::Options::default()) {
        imported::check(&done);
    }
});
