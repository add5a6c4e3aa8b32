#!/usr/bin/env bash
# loadlab against h2load over HTTP/2 (h2 over TLS): nginx pinned to core 0, each generator
# pinned to core 1, 1 thread, 4 connections x 25 streams, 10 s, alternating, 6 rounds; the
# medians, then loadlab's CPU per request and rate against h2load's as paired rounds (the
# ratio within each round, their centre with its exact 95% interval: bench/paired.py).
#
#   bash bench/vs-h2load.sh
#   ROUNDS=1 SECS=3 bash bench/vs-h2load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
SECS=${SECS:-10}
CONNS=${CONNS:-4}
STREAMS=${STREAMS:-25}
PORT=${PORT:-18444}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need h2load || missing+=(nghttp2-client)
need nginx || missing+=(nginx-light)
need openssl || missing+=(openssl)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# NO_BUILD=1: the binary as it is (LOADLAB= another one, e.g. a debug build for a smoke run).
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p loadlab-cli
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/vs-h2load-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
bash bench/make-cert.sh "$OUT"
source bench/lib.sh
start_nginx bench/nginx-h2.conf "https://127.0.0.1:$PORT/"
URL="https://localhost:$PORT/"

run_h2load() {
    timed h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$SECS" "$URL" > "$OUT/h2load.txt" 2>&1
    echo "$(awk '/^requests:/ {print $8}' "$OUT/h2load.txt") $(cpu_seconds)"
}
run_loadlab() {
    timed "$LOADLAB" run -q -t1 --http2 -c"$CONNS" --streams "$STREAMS" -d"${SECS}s" \
        --cacert "$OUT/ca.pem" --json "$OUT/loadlab.json" "$URL"
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['measured']; print(r['status_codes'].get('200', 0))" "$OUT/loadlab.json")
    echo "$n $(cpu_seconds)"
}
# Over HTTP/2 loadlab does not busy-poll unless asked; loadlab_busy asks (it loses).
run_loadlab_busy() {
    timed "$LOADLAB" run -q -t1 --http2 -c"$CONNS" --streams "$STREAMS" -d"${SECS}s" \
        --busy-poll --cacert "$OUT/ca.pem" --json "$OUT/loadlab.json" "$URL"
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['measured']; print(r['status_codes'].get('200', 0))" "$OUT/loadlab.json")
    echo "$n $(cpu_seconds)"
}
alternate h2load loadlab loadlab_busy
echo "raw output: $OUT"
