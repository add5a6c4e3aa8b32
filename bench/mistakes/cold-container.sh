#!/usr/bin/env bash
# Mistake 1 (post 000): the first run hit a cold container, p50 5 ms -> 64 ms, and the author
# nearly blamed the framework. Here: a JVM lab target measured from its first request (wrong),
# then the same target with a warm-up first (right). Usage: bash bench/mistakes/cold-container.sh
# [TARGET=java-webflux] [SECS=3] [WARMUP=10s]. Needs the target built (`loadlab lab build T`).
source "$(dirname "$0")/lib.sh"
TARGET=${TARGET:-java-webflux}; SECS=${SECS:-3}; WARMUP=${WARMUP:-10s}
ll cold --target "$TARGET" /plaintext -c 8 -d "${SECS}s" --pin 0
ll warm --target "$TARGET" /plaintext -c 8 -d "${SECS}s" --pin 0 --warmup "$WARMUP"
echo "== mistake 1, the cold container: $TARGET, closed loop 8 connections, ${SECS}s (out: $OUT)"
header "run"
row "wrong: measured from a cold start" cold
row "right: after --warmup $WARMUP" warm
python3 - "$OUT/cold.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1])).get("first_requests") or {}
if f:
    print(f"cold run, first {f['requests']}: p50 {f['latency_us']['p50']/1000:.2f} ms; the rest: "
          f"p50 {f['rest_us']['p50']/1000:.2f} ms; flagged cold_start={f['cold_start']}")
PY
echo "loadlab, cold run:"
said cold '^(started|First [0-9]+|  Start-up|  ! )'
echo "loadlab, warmed run:"
said warm '^(closed loop|Warm-up|First [0-9]+|  ! )'
