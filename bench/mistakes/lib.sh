# Shared by bench/mistakes/*.sh: sourced, not run. Each script makes one post's first wrong
# number on purpose and the right one beside it, on loopback, a few seconds per run, the server
# on core 0 and loadlab on core 1. It only stops the processes it started (by PID).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOADLAB=${LOADLAB:-$ROOT/target/release/loadlab}
[ -x "$LOADLAB" ] || { echo "no $LOADLAB: cargo build --release -p loadlab-cli, or set LOADLAB" >&2; exit 2; }
OUT=${OUT:-$ROOT/bench/out/mistakes-$(basename "$0" .sh)-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# ll NAME ARGS...: one loadlab run, its text in $OUT/NAME.txt, its result in $OUT/NAME.json
# (with RUN_ON=CPU set, loadlab is pinned there by taskset).
ll() { local name=$1; shift
    ${RUN_ON:+taskset -c "$RUN_ON"} "$LOADLAB" run --json "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1 || true; }

# said NAME REGEX: loadlab's own lines from run NAME, indented, as it printed them.
said() { grep -E "$2" "$OUT/$1.txt" | sed 's/^/    | /' || echo "    | (loadlab printed no line matching $2)"; }

# row LABEL NAME: one table row from run NAME's result.
row() { python3 - "$1" "$OUT/$2.json" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{label:<34} no result ({e})"); sys.exit()
m = d["measured"]; r = m["requests"]; l = m.get("latency_us") or {}
ms = lambda us: f"{us / 1000:.2f} ms" if us is not None else "-"
print(f"{label:<34} {r['per_second']:>10,.0f} {ms(l.get('p50')):>10} {ms(l.get('p99')):>10} "
      f"{r['completed']:>9,} {r['failed']:>7,}")
PY
}
header() { printf '%-34s %10s %10s %10s %9s %7s\n' "$1" "req/s" "p50" "p99" "completed" "failed"; }

# upstream: the mock upstream on core 0; sets UP (its URL) and adds its PID to PIDS.
start_upstream() {
    taskset -c 0 "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.txt" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 50); do
        UP=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$OUT/upstream.txt" | head -1 || true)
        [ -n "$UP" ] && curl -sf "$UP/__stats" >/dev/null 2>&1 && return
        sleep 0.1
    done
    echo "the mock upstream did not start: see $OUT/upstream.txt" >&2; exit 2
}
upstream_stats() { curl -sf "$UP/__stats"; }
