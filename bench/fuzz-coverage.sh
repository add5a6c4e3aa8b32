#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, through libfuzzer-sys) of the HTTP/1.1 response parser:
# fuzz/fuzz_targets/response_parser.rs feeds each input whole and in small reads, and fails
# on a panic, an overclaim, or two splits of one stream that parse differently. The property
# tests (bench/fuzz-parser.sh) generate responses from a model; this explores the parser's
# branches from its own coverage, with AddressSanitizer.
#
#   bash bench/fuzz-coverage.sh                  # 5 minutes
#   FUZZ_SECONDS=60 bash bench/fuzz-coverage.sh
#
# Needs a nightly toolchain (`rustup toolchain install nightly`); fuzz/ is a workspace of
# its own, so the project's stable build and CI never build it. With cargo-fuzz installed
# (`cargo install cargo-fuzz`) `cargo +nightly fuzz run response_parser` does the same;
# without it, this script passes the same compiler flags itself. The corpus grows in
# fuzz/corpus/response_parser from the seeds in fuzz/seeds; a crash is written to
# fuzz/artifacts/ and fails the script (replay it with: the binary path, then the file).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_TO_RUN="${FUZZ_SECONDS:-300}"
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "bench/fuzz-coverage.sh needs a nightly toolchain: rustup toolchain install nightly" >&2
  exit 2
fi
TARGET="$(rustc +nightly -vV | sed -n 's/^host: //p')"
# What cargo-fuzz passes: sanitizer coverage (8-bit counters, the PC table, comparisons
# traced for libFuzzer's value profile), AddressSanitizer, debug assertions and overflow
# checks on. --target keeps these flags off build scripts and proc macros.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address \
-Cdebug-assertions -Coverflow-checks"
# Each target in turn: the HTTP/1.1 response parser, then the agent's request parsing
# (fuzz/fuzz_targets/agent_request.rs: admission, query numbers, JSON bodies).
status=0
for NAME in ${FUZZ_TARGETS:-response_parser agent_request}; do
  cargo +nightly build --release --locked --target "$TARGET" --bin "$NAME"
  BIN="target/$TARGET/release/$NAME"
  mkdir -p "corpus/$NAME" artifacts
  echo "fuzzing $NAME for ${SECONDS_TO_RUN}s ($BIN)"
  set +e
  "$BIN" "corpus/$NAME" seeds \
    -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -artifact_prefix=artifacts/ \
    -print_final_stats=1 >"artifacts/$NAME-last-run.log" 2>&1
  one=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|stat::|ERROR|panicked|SUMMARY|Test unit' \
    "artifacts/$NAME-last-run.log" | tail -40 || true
  echo "corpus: $(ls "corpus/$NAME" | wc -l) inputs; log: fuzz/artifacts/$NAME-last-run.log"
  [ "$one" -eq 0 ] || status=$one
done
exit "$status"
