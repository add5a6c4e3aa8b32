#!/usr/bin/env bash
# Post 002's third case in the lab: /upstream-grpc?calls=8 with one channel for the process and
# with a channel per call, beside /upstream?calls=8 (HTTP/1.1, pooled) for scale. Set up as
# bench/lab-table.sh: each target pinned to core 0 with one worker, loadlab and the mock upstream
# (which serves HTTP and gRPC on one port) on core 1; 50 connections, 10 s per column after a
# 1 s warm-up and the manifest's warm-up. The upstream's gRPC counters give the connections and
# streams each column cost.
#
#   bash bench/upstream-grpc.sh                               # every built target with the capability
#   TARGETS="rust-axum go-nethttp" SECS=3 bash bench/upstream-grpc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
TARGET_CPU=${TARGET_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

# LOADLAB=path/to/loadlab runs that binary instead of building this checkout's.
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$PWD/target/release/loadlab
fi
OUT=$PWD/bench/out/upstream-grpc-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
"$LOADLAB" lab list --json > "$OUT/targets.json"
# shellcheck source=bench/lab-lib.sh
. "$(dirname "$0")/lab-lib.sh"
TARGETS=${TARGETS:-$(python3 -c "
import json,sys
print(' '.join(t['name'] for t in json.load(open(sys.argv[1]))
               if t['state'] == 'built' and 'upstream-grpc' in t['capabilities']))" "$OUT/targets.json")}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

taskset -c "$LOAD_CPU" "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.log" 2>&1 &
pids+=($!)
UPSTREAM="http://$(first_match "$OUT/upstream.log" '^listening on ' | awk '{print $3}')"

load() { # url name -> "rps p99_ms bad"
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 -d "${SECS}s" --warmup 1s --json "$OUT/$2.json" "$1"
    python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); m=r['measured']
ok=sum(v for k,v in m['status_codes'].items() if k.startswith('2'))
print(round(m['requests']['per_second']), round(m['latency_us']['p99']/1000, 2) if m['latency_us'] else '-', m['requests']['failed'] + m['requests']['completed'] - ok)
" "$OUT/$2.json"
}
# "requests connections grpc_requests grpc_connections grpc_streams"
stats() { curl -s "$UPSTREAM/__stats" | python3 -c "
import json,sys; s=json.load(sys.stdin)
print(s['requests'], s['connections'], s['grpc_requests'], s['grpc_connections'], s['grpc_streams'])"; }
fmt() { python3 -c "import sys; print(f'{int(sys.argv[1]):,}')" "$1"; }

{
    echo '| target | /upstream?calls=8 (HTTP, pooled): req/s (p99) | /upstream-grpc?calls=8, one channel: req/s (p99), connections, streams | a channel per call: req/s (p99), connections |'
    echo '|---|---|---|---|'
} > "$OUT/table.md"
for t in $TARGETS; do
    "$LOADLAB" lab serve "$t" --pin "$TARGET_CPU" --workers 1 --upstream "$UPSTREAM" > "$OUT/$t.log" 2>&1 &
    serve_pid=$!
    pids+=($serve_pid)
    URL=$(first_match "$OUT/$t.log" '^http://')
    warm=$(warmup_of "$t")
    if [ "$warm" -gt 1 ]; then
        taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 -d "${warm}s" "$URL/upstream-grpc?calls=8" >/dev/null
    fi
    read -r h_rps h_p99 h_bad < <(load "$URL/upstream?calls=8" "$t-http")
    read -r _ _ g0 gc0 gs0 < <(stats)
    read -r g_rps g_p99 g_bad < <(load "$URL/upstream-grpc?calls=8" "$t-grpc-pooled")
    read -r _ _ g1 gc1 gs1 < <(stats)
    read -r p_rps p_p99 p_bad < <(load "$URL/upstream-grpc?calls=8&client=per-call" "$t-grpc-per-call")
    read -r _ _ g2 gc2 _ < <(stats)
    kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
    bad=$((h_bad + g_bad + p_bad))
    row="| $t | $(fmt "$h_rps") ($h_p99 ms) | $(fmt "$g_rps") ($g_p99 ms), $(fmt $((gc1 - gc0))) conns, $(fmt $((gs1 - gs0))) streams for $(fmt $((g1 - g0))) calls | $(fmt "$p_rps") ($p_p99 ms), $(fmt $((gc2 - gc1))) conns for $(fmt $((g2 - g1))) calls |"
    [ "$bad" -gt 0 ] && row="$row ($bad non-2xx or failed)"
    echo "$row" | tee -a "$OUT/table.md"
done
echo
cat "$OUT/table.md"
echo "raw output: $OUT"
