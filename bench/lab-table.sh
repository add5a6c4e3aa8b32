#!/usr/bin/env bash
# The README's lab table, measured by loadlab itself: each target pinned to core 0 with one
# worker, loadlab (and the mock upstream) on core 1; 50 connections, 10 s per row, on
# /plaintext and /upstream?calls=8 with a pooled client and with a client per call.
#
#   bash bench/lab-table.sh                 # all Rust targets
#   TARGETS="rust-axum" SECS=3 bash bench/lab-table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-"rust-actix-web rust-axum rust-hyper rust-warp"}
SECS=${SECS:-10}
TARGET_CPU=${TARGET_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

cargo build --release -q -p loadlab-cli
LOADLAB=$PWD/target/release/loadlab
"$LOADLAB" lab build all >/dev/null
OUT=$PWD/bench/out/lab-table-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# Waits for the first line of a background process's output that matches a pattern.
first_match() { # file pattern
    for _ in $(seq 300); do
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null || true)
        [ -n "$line" ] && { echo "$line"; return; }
        sleep 0.1
    done
    echo "timed out waiting for $2 in $1" >&2; exit 2
}

taskset -c "$LOAD_CPU" "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.log" 2>&1 &
pids+=($!)
UPSTREAM="http://$(first_match "$OUT/upstream.log" '^listening on ' | awk '{print $3}')"

load() { # url name -> "rps p99_ms"
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 -d "${SECS}s" --warmup 1s --json "$OUT/$2.json" "$1"
    python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); m=r['measured']
ok=sum(v for k,v in m['status_codes'].items() if k.startswith('2'))
print(round(m['requests']['per_second']), round(m['latency_us']['p99']/1000, 2), m['requests']['failed'] + m['requests']['completed'] - ok)
" "$OUT/$2.json"
}
stats() { curl -s "$UPSTREAM/__stats" | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['requests'], s['connections'])"; }

printf '| target | /plaintext req/s (p99) | /upstream?calls=8 pooled req/s (p99), upstream conns | per-call req/s (p99), upstream conns |\n|---|---|---|---|\n' > "$OUT/table.md"
for t in $TARGETS; do
    "$LOADLAB" lab serve "$t" --cpus "$TARGET_CPU" --workers 1 --upstream "$UPSTREAM" > "$OUT/$t.log" 2>&1 &
    serve_pid=$!
    pids+=($serve_pid)
    URL=$(first_match "$OUT/$t.log" '^http://')
    read -r p_rps p_p99 p_bad < <(load "$URL/plaintext" "$t-plaintext")
    read -r r0 c0 < <(stats)
    read -r u_rps u_p99 u_bad < <(load "$URL/upstream?calls=8" "$t-pooled")
    read -r r1 c1 < <(stats)
    read -r c_rps c_p99 c_bad < <(load "$URL/upstream?calls=8&client=per-call" "$t-per-call")
    read -r r2 c2 < <(stats)
    kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
    bad=$((p_bad + u_bad + c_bad))
    row="| $t | $p_rps ($p_p99 ms) | $u_rps ($u_p99 ms), $((c1 - c0)) conns for $((r1 - r0)) calls | $c_rps ($c_p99 ms), $((c2 - c1)) conns for $((r2 - r1)) calls |"
    [ "$bad" -gt 0 ] && row="$row ($bad non-2xx or failed)"
    echo "$row" | tee -a "$OUT/table.md"
done
echo
cat "$OUT/table.md"
echo "raw output: $OUT"
