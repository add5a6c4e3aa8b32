#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, through libfuzzer-sys) of loadlab's parsers of what
# others send it, with AddressSanitizer: the HTTP/1.1 response parser
# (fuzz/fuzz_targets/response_parser.rs feeds each input whole and in small reads, and fails
# on a panic, an overclaim, or two splits of one stream that parse differently; the property
# tests, bench/fuzz-parser.sh, generate responses from a model, this explores the parser's
# branches from its own coverage), the agent's requests, the scenario file, the HAR,
# Postman and curl importers, and the spill-file reader of `loadlab recover`.
#
#   FUZZ_TARGETS="import_har spill_reader" bash bench/fuzz-coverage.sh   # some of them
#
#   bash bench/fuzz-coverage.sh                  # 5 minutes
#   FUZZ_SECONDS=60 bash bench/fuzz-coverage.sh
#
# Needs a nightly toolchain (`rustup toolchain install nightly`); fuzz/ is a workspace of
# its own, so the project's stable build and CI never build it. With cargo-fuzz installed
# (`cargo install cargo-fuzz`) `cargo +nightly fuzz run response_parser` does the same;
# without it, this script passes the same compiler flags itself. Each target's corpus grows
# in fuzz/corpus/NAME from its seeds: fuzz/seeds/NAME/ when there is one, else the files of
# fuzz/seeds (the first two targets'); a crash is written to fuzz/artifacts/ and fails the
# script (replay it with: the binary path, then the file).
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
# SQLite's C (rusqlite's bundled copy, linked into the targets that reach the session crate)
# defines a few globals ASan's one-definition check reports when it is instrumented: not a
# defect of the code under test, and no target reads a database.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0"
# Each target in turn: the HTTP/1.1 response parser; the agent's request parsing
# (agent_request.rs: admission, query numbers, JSON bodies); the scenario file as TOML text,
# compiled with no files (scenario_file.rs); the importers on any text (import_har.rs,
# import_postman.rs, import_curl.rs: what they write must load as the format); the spill
# file as `loadlab recover` reads it (spill_reader.rs).
ALL="response_parser agent_request scenario_file import_har import_postman import_curl spill_reader"
status=0
for NAME in ${FUZZ_TARGETS:-$ALL}; do
  cargo +nightly build --release --locked --target "$TARGET" --bin "$NAME"
  BIN="target/$TARGET/release/$NAME"
  mkdir -p "corpus/$NAME" artifacts
  # libFuzzer reads a directory's subdirectories too: the first two targets get a copy of
  # the top-level files only, not the other targets' seeds.
  if [ -d "seeds/$NAME" ]; then
    SEEDS="seeds/$NAME"
  else
    SEEDS="artifacts/seeds-top"
    mkdir -p "$SEEDS"
    find seeds -maxdepth 1 -type f -exec cp {} "$SEEDS/" \;
  fi
  # A spill file's header is a whole result (a few kilobytes) before its first interval.
  MAX_LEN=4096
  [ "$NAME" = spill_reader ] && MAX_LEN=16384
  echo "fuzzing $NAME for ${SECONDS_TO_RUN}s ($BIN)"
  set +e
  "$BIN" "corpus/$NAME" "$SEEDS" \
    -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -artifact_prefix=artifacts/ \
    -print_final_stats=1 >"artifacts/$NAME-last-run.log" 2>&1
  one=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|stat::|ERROR|panicked|SUMMARY|Test unit' \
    "artifacts/$NAME-last-run.log" | tail -40 || true
  echo "corpus: $(ls "corpus/$NAME" | wc -l) inputs; log: fuzz/artifacts/$NAME-last-run.log"
  [ "$one" -eq 0 ] || status=$one
done
exit "$status"
