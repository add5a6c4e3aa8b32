//! libFuzzer target for the HAR importer (`loadlab_import::har::import`) on any text, with
//! pages on or off by the first byte: nothing may panic, and what it imports must be a file
//! the scenario loader reads as the format (see `common/imported.rs`).

#![no_main]

#[path = "common/imported.rs"]
mod imported;

use libfuzzer_sys::fuzz_target;
use loadlab_import::har;

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let options = har::Options {
        label: "fuzz.har".into(),
        pages: flags & 1 == 1,
        keep_assets: flags & 2 == 2,
        keep_secrets: flags & 4 == 4,
        ..har::Options::default()
    };
    if let Ok(done) = har::import(text, &options) {
        imported::check(&done);
    }
});
