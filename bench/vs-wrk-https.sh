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
source bench/lib.sh
start_nginx bench/nginx-tls.conf "https://127.0.0.1:$PORT/"
URL="https://localhost:$PORT/"

run_wrk() {
    timed wrk -t1 -c"$CONNS" -d"${SECS}s" "$URL" > "$OUT/wrk.txt"
    echo "$(awk '/requests in/ {print $1}' "$OUT/wrk.txt") $(cpu_seconds)"
}
run_loadlab() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --cacert "$OUT/ca.pem" \
        --json "$OUT/loadlab.json" "$URL"
    n=$(loadlab_completed "$OUT/loadlab.json")
    echo "$n $(cpu_seconds)"
}
# loadlab, pinned apart from nginx, busy-polls by default (it says why): wrk's thread, always
# busy, never sleeps either. loadlab_sleep (--no-busy-poll) sleeps between responses, and
# then nginx pays an interrupt to wake it for each one.
run_loadlab_sleep() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --no-busy-poll --cacert "$OUT/ca.pem" \
        --json "$OUT/loadlab.json" "$URL"
    n=$(loadlab_completed "$OUT/loadlab.json")
    echo "$n $(cpu_seconds)"
}
alternate wrk loadlab loadlab_sleep
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
