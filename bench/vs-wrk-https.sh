#!/usr/bin/env bash
# loadlab against wrk over HTTPS with keep-alive: nginx (TLS) pinned to core 0, each
# generator pinned to core 1, 1 thread, 50 connections, 10 s, alternating, 3 rounds.
# Then loadlab alone with a new connection per request, with and without resumption.
#
#   bash bench/vs-wrk-https.sh
#   ROUNDS=1 SECS=3 bash bench/vs-wrk-https.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18443}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need wrk || missing+=(wrk)
need nginx || missing+=(nginx-light)
need openssl || missing+=(openssl)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release -q -p loadlab-cli
LOADLAB=$PWD/target/release/loadlab
OUT=$PWD/bench/out/vs-wrk-https-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
bash bench/make-cert.sh "$OUT"
sed -e "s|__DIR__|$OUT|g" -e "s|__PORT__|$PORT|g" bench/nginx-tls.conf > "$OUT/nginx.conf"
ulimit -n 65536 2>/dev/null || true
taskset -c "$SERVER_CPU" nginx -c "$OUT/nginx.conf" -p "$OUT" &
NGINX_PID=$!
trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -skf "https://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
URL="https://localhost:$PORT/"

run_wrk() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c "$LOAD_CPU" \
        wrk -t1 -c"$CONNS" -d"${SECS}s" "$URL" > "$OUT/wrk.txt"
    echo "$(awk '/requests in/ {print $1}' "$OUT/wrk.txt") $(awk '{print $1 + $2}' "$OUT/time")"
}
run_loadlab() {
    /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c "$LOAD_CPU" \
        "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --cacert "$OUT/ca.pem" \
        --json "$OUT/loadlab.json" "$URL"
    n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['measured']['requests']['completed'])" "$OUT/loadlab.json")
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
secs = float(sys.argv[2]); med = {}
for tool in ("wrk", "loadlab"):
    runs = [(int(n), float(c)) for t, n, c in rows if t == tool]
    med[tool] = (statistics.median(n / secs for n, _ in runs), statistics.median(c * 1e5 / n for n, c in runs))
print(f"\n{'tool':<8} {'median requests/s':>18} {'CPU-s per 100k':>15}")
for tool, (rps, cpu) in med.items():
    print(f"{tool:<8} {rps:>18,.0f} {cpu:>15.2f}")
print(f"\nloadlab/wrk over HTTPS with keep-alive: {med['loadlab'][0] / med['wrk'][0]:.3f}x requests/s")
PY
echo
for resume in on off; do
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --no-keepalive \
        --tls-resume "$resume" --cacert "$OUT/ca.pem" --json "$OUT/nk-$resume.json" "$URL"
    python3 - "$OUT/nk-$resume.json" "$resume" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m = r["measured"]; h = m["tls_handshake_us"] or {}
print(f"no keep-alive, resumption {sys.argv[2]:>3}: {m['requests']['per_second']:>9,.0f} requests/s, "
      f"handshake p50 {h.get('p50', 0) / 1000:.2f} ms, {m['tls_resumed']:,} resumed of {m['tls_resumed'] + m['tls_full']:,}, "
      f"failed {m['requests']['failed']}")
PY
done
echo "raw output: $OUT"
