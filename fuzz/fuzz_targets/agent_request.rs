//! libFuzzer target for the agent's request parsing (`loadlab_agent::fuzzing::parse_request`):
//! the admission headers (token, protocol, nonce), the query numbers and each endpoint's JSON
//! body, as the agent reads a request. Whatever a client sends, nothing may panic, and a
//! request without the right token is never admitted.

#![no_main]

use libfuzzer_sys::fuzz_target;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

fuzz_target!(|input: &[u8]| {
    let out = loadlab_agent::fuzzing::parse_request(TOKEN, input);
    let admitted = out.first().is_some_and(|l| l == "admit: Ok(())");
    if admitted {
        let bearer = format!("Bearer {TOKEN}");
        assert!(
            input
                .split(|b| *b == b'\n')
                .any(|line| line.trim_ascii_end().ends_with(bearer.as_bytes())),
            "admitted without the token: {out:?}"
        );
    }
});
