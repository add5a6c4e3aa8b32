//! libFuzzer target for the Postman importer (`loadlab_import::postman::import`) on any
//! text: nothing may panic, and what it imports must be a file the scenario loader reads as
//! the format (see `common/imported.rs`).

#![no_main]

#[path = "common/imported.rs"]
mod imported;

use libfuzzer_sys::fuzz_target;
use loadlab_import::postman;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let options = postman::Options {
        label: "fuzz.json".into(),
        ..postman::Options::default()
    };
    if let Ok(done) = postman::import(text, &options) {
        imported::check(&done);
    }
});
