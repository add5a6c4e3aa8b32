#!/usr/bin/env bash
# loadlab over HTTP/3 against its own HTTP/2 and oha's HTTP/3, all against one server that
# speaks both on one port (the engine's h3_bench_server example: HTTP/2 over TCP, HTTP/3 over
# UDP, one thread) pinned to core 0; each generator pinned to core 1, 1 thread,
# 4 connections x 25 streams, 10 s, alternating, 3 rounds. Each run's 200s are checked
# against the server's own count (GET /__count): they differ by at most the requests still in
# flight when a run ends (-c x --streams).
#
# oha is built with its http3 feature from crates.io into target/bench-tools (once); without
# it the table has loadlab's two rows.
#
#   bash bench/vs-h3.sh
#   ROUNDS=1 SECS=3 bash bench/vs-h3.sh
#   NO_BUILD=1 bash bench/vs-h3.sh      # the release binaries as they are
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-4}
STREAMS=${STREAMS:-25}
PORT=${PORT:-18445}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OHA_VERSION=${OHA_VERSION:-1.16.0}

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need openssl || missing+=(openssl)
need curl || missing+=(curl)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "${NO_BUILD:-}" != 1 ]; then
    cargo build --release -q -p loadlab-cli
    cargo build --release -q -p loadlab-engine --example h3_bench_server
fi
LOADLAB=$PWD/target/release/loadlab
SERVER=$PWD/target/release/examples/h3_bench_server
OHA=$PWD/target/bench-tools/bin/oha
if [ ! -x "$OHA" ] && [ "${NO_OHA:-}" != 1 ]; then
    cargo install -q oha --version "$OHA_VERSION" --features http3 --locked \
        --root "$PWD/target/bench-tools" || echo "oha with http3 did not build: its rows are left out"
fi
OUT=$PWD/bench/out/vs-h3-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
bash bench/make-cert.sh "$OUT"
source bench/lib.sh

taskset -c "$SERVER_CPU" "$SERVER" "$PORT" "$OUT/server.pem" "$OUT/server.key" 2> "$OUT/server.log" &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
URL="https://localhost:$PORT/"
for _ in $(seq 50); do
    curl -sf --http2 --cacert "$OUT/ca.pem" "${URL}__count" >/dev/null && break
    sleep 0.1
done
served() { curl -sf --http2 --cacert "$OUT/ca.pem" "${URL}__count"; }

# Prints "requests cpu_seconds" and appends the server's count beside loadlab's to counts.txt.
loadlab_run() { # tool flags...
    local tool=$1 before after n
    shift
    before=$(served)
    timed "$LOADLAB" run -q -t1 "$@" -c"$CONNS" --streams "$STREAMS" -d"${SECS}s" \
        --cacert "$OUT/ca.pem" --json "$OUT/$tool.json" "$URL"
    after=$(served)
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['measured']; print(r['status_codes'].get('200', 0))" "$OUT/$tool.json")
    echo "$tool loadlab=$n server=$((after - before))" >> "$OUT/counts.txt"
    echo "$n $(cpu_seconds)"
}
run_loadlab_h3() { loadlab_run loadlab_h3 --http3; }
run_loadlab_h2() { loadlab_run loadlab_h2 --http2; }
run_oha_h3() {
    local before after n
    before=$(served)
    timed "$OHA" --http-version 3 --no-tui -c"$CONNS" -p"$STREAMS" -z"${SECS}s" \
        --cacert "$OUT/ca.pem" --output-format json "$URL" > "$OUT/oha.json" 2> "$OUT/oha.err"
    after=$(served)
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['statusCodeDistribution'].get('200', 0))" "$OUT/oha.json")
    echo "oha_h3 oha=$n server=$((after - before))" >> "$OUT/counts.txt"
    echo "$n $(cpu_seconds)"
}
: > "$OUT/counts.txt"
tools=(loadlab_h3 loadlab_h2)
if [ -x "$OHA" ]; then
    tools+=(oha_h3)
fi
alternate "${tools[@]}"
echo
echo "generator's 200s against the server's count (in flight at the end: up to $((CONNS * STREAMS))):"
cat "$OUT/counts.txt"
echo "raw output: $OUT"
