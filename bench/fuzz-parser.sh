#!/usr/bin/env bash
# A longer run of the response parser's property tests (crates/loadlab-engine/tests/
# parser_props.rs): generated responses in every framing, split at every boundary, then
# mutated. CI runs 256 cases per property; this runs CASES (default 1,000,000) in release.
#
#   bash bench/fuzz-parser.sh            # a million cases per property, a few minutes
#   CASES=10000000 bash bench/fuzz-parser.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CASES="${CASES:-1000000}"
echo "parser properties, $CASES cases each (release build)"
time PROPTEST_CASES="$CASES" cargo test --release --locked -p loadlab-engine --test parser_props -- --nocapture
