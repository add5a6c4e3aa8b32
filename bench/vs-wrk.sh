#!/usr/bin/env bash
# loadlab against wrk, closed loop over HTTP/1.1 keep-alive, on one machine:
# nginx pinned to core 0, each generator pinned to core 1, 1 thread, 50 connections, 10 s,
# alternating tools, 3 rounds. Prints median requests/s, the ratio loadlab/wrk, and generator
# CPU seconds per 100,000 requests. Then holds 10,000 connections for 10 s.
#
#   bash bench/vs-wrk.sh            # the full benchmark (about 2 minutes)
#   ROUNDS=1 SECS=3 bash bench/vs-wrk.sh   # a quick look
#
# Do not run it while anything else (a build) uses the CPU: the numbers would be noise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18181}
BIG=${BIG:-10000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need wrk || missing+=(wrk)
need nginx || missing+=(nginx-light)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing from Debian's packages: ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cargo build --release -q -p loadlab-cli
LOADLAB=$PWD/target/release/loadlab
OUT=$PWD/bench/out/vs-wrk-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
sed -e "s|__DIR__|$OUT|g" -e "s|__PORT__|$PORT|g" bench/nginx.conf > "$OUT/nginx.conf"
ulimit -n 65536 2>/dev/null || true
taskset -c "$SERVER_CPU" nginx -c "$OUT/nginx.conf" -p "$OUT" &
NGINX_PID=$!
trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/"

# Runs a command pinned to the load core; prints "requests cpu_seconds".
run_wrk() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c "$LOAD_CPU" \
        wrk -t1 -c"$CONNS" -d"${SECS}s" "$URL" > "$OUT/wrk.txt"
    local n
    n=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
    echo "$n $(awk '{print $1 + $2}' "$OUT/time")"
}
run_loadlab() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c "$LOAD_CPU" \
        "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --json "$OUT/loadlab.json" "$URL"
    local n
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['measured']['requests']['completed'])" "$OUT/loadlab.json")
    echo "$n $(awk '{print $1 + $2}' "$OUT/time")"
}

: > "$OUT/rounds.txt"
for round in $(seq "$ROUNDS"); do
    for tool in wrk loadlab; do
        read -r n cpu < <("run_$tool")
        echo "$tool $n $cpu" >> "$OUT/rounds.txt"
        awk -v r="$round" -v t="$tool" -v n="$n" -v c="$cpu" -v s="$SECS" 'BEGIN {
            printf "round %d  %-8s %10.0f requests/s  %.2f CPU-s per 100k requests\n", r, t, n / s, c * 100000 / n }' 
    done
done

python3 - "$OUT/rounds.txt" "$SECS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
secs = float(sys.argv[2])
med = {}
for tool in ("wrk", "loadlab"):
    runs = [(int(n), float(c)) for t, n, c in rows if t == tool]
    med[tool] = (statistics.median(n / secs for n, _ in runs),
                 statistics.median(c * 100000 / n for n, c in runs))
print()
print(f"{'tool':<8} {'median requests/s':>18} {'CPU-s per 100k':>15}")
for tool, (rps, cpu) in med.items():
    print(f"{tool:<8} {rps:>18,.0f} {cpu:>15.2f}")
print(f"\nloadlab/wrk requests/s: {med['loadlab'][0] / med['wrk'][0]:.3f}x")
print(f"loadlab/wrk CPU per request: {med['loadlab'][1] / med['wrk'][1]:.3f}x (lower is better)")
PY

echo
echo "== $BIG connections held for ${SECS}s (loadlab, 1 thread, pinned to core $LOAD_CPU)"
taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c"$BIG" -d"${SECS}s" --connect-timeout 30s \
    --json "$OUT/big.json" "$URL"
python3 - "$OUT/big.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measured"]; w = r.get("warmup")
opened = m["connections_opened"]
print(f"connections opened {opened:,}, completed {m['requests']['completed']:,}, "
      f"failed {m['requests']['failed']:,}, errors {m['errors'] or 'none'}, "
      f"{m['requests']['per_second']:,.0f} requests/s, p99 {m['latency_us']['p99'] / 1000:.1f} ms")
for w in r["warnings"]:
    print("warning:", w)
PY
echo "raw output: $OUT"
