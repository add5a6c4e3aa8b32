#!/usr/bin/env bash
# Mistake 2 (post 000): Postman's runner sends one request at a time, so "1000 iterations"
# measured latency at concurrency 1. Here the same server at 1 connection (wrong), at 64
# connections and at an open-loop rate (right), and the load model loadlab prints for each.
# Usage: bash bench/mistakes/one-at-a-time.sh [TARGET=rust-hyper] [SECS=2] [RATE=5000]
source "$(dirname "$0")/lib.sh"
TARGET=${TARGET:-rust-hyper}; SECS=${SECS:-2}; RATE=${RATE:-5000}
ll one --target "$TARGET" /plaintext -c 1 -d "${SECS}s" --pin 0
ll many --target "$TARGET" /plaintext -c 64 -d "${SECS}s" --pin 0
ll open --target "$TARGET" /plaintext --rate "$RATE" -d "${SECS}s" --pin 0
echo "== mistake 2, one request at a time: $TARGET, ${SECS}s each (out: $OUT)"
header "load model"
row "wrong: 1 connection (Postman)" one
row "right: 64 connections" many
row "right: open loop $RATE/s" open
for r in one many open; do echo "loadlab's load model, run $r:"; said "$r" '^(closed loop|open loop)'; done
