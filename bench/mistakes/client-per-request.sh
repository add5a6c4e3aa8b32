#!/usr/bin/env bash
# Mistake 4 (post 004): a proxy created an HTTP client per request; no pooling made the Rust
# version 2x slower than Node. Here a lab target's /upstream makes 8 calls to loadlab's mock
# upstream per request, with its pooled client (right) and with a client per call (wrong); the
# mock upstream's own counters give connections per request. Usage:
# bash bench/mistakes/client-per-request.sh [TARGET=rust-hyper] [SECS=2] [CALLS=8]
source "$(dirname "$0")/lib.sh"
TARGET=${TARGET:-rust-hyper}; SECS=${SECS:-2}; CALLS=${CALLS:-8}
start_upstream
conns() { upstream_stats | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["requests"], d["connections"])'; }
read -r r0 c0 < <(conns)
ll percall --target "$TARGET" "/upstream?calls=$CALLS&client=per-call" -c 16 -d "${SECS}s" --pin 0 --upstream "$UP"
read -r r1 c1 < <(conns)
ll pooled --target "$TARGET" "/upstream?calls=$CALLS" -c 16 -d "${SECS}s" --pin 0 --upstream "$UP"
read -r r2 c2 < <(conns)
echo "== mistake 4, a client per request: $TARGET /upstream?calls=$CALLS, 16 connections, ${SECS}s (out: $OUT)"
header "upstream client"
row "wrong: client per call" percall
row "right: one pooled client" pooled
awk -v r="$((r1 - r0))" -v c="$((c1 - c0))" 'BEGIN { printf "mock upstream, per-call run: %d calls on %d connections (%.2f connections per call)\n", r, c, c / (r ? r : 1) }'
awk -v r="$((r2 - r1))" -v c="$((c2 - c1))" 'BEGIN { printf "mock upstream, pooled run:   %d calls on %d connections (%.4f connections per call)\n", r, c, c / (r ? r : 1) }'
for r in percall pooled; do echo "loadlab, run $r:"; said "$r" '^(Throughput|Errors|  ! )|upstream'; done
