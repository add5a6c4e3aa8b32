#!/usr/bin/env bash
# loadlab over HTTP/3 against its own HTTP/2 and oha's HTTP/3, against two servers that each
# speak both on one port: the engine's h3_bench_server example (HTTP/2 over TCP, HTTP/3 over
# UDP, one thread; quinn) and Debian's Caddy 2.6 (quic-go; a static 200, its JSON access log
# on), each pinned to core 0; each generator pinned to core 1, 1 thread, 4 connections x 25
# streams, 10 s, alternating, 6 rounds per server; loadlab's arms against oha as paired
# rounds (the ratio within each round, their centre with its exact 95% interval:
# bench/paired.py). Each run's 200s are checked against the server's own count:
# h3_bench_server's (GET /__count), Caddy's access log (its lines for the run's protocol,
# "proto":"HTTP/3.0" or "HTTP/2.0"). The server counts every request it
# answered, the generator only those that ended before its clock did: the server's count must
# exceed the generator's by at most the requests in flight at the end (-c x --streams), and a
# run outside that is marked MISMATCH (the script then exits 1).
#
# oha is built with its http3 feature from crates.io into target/bench-tools (once); without
# it the tables have loadlab's two rows. Without caddy (apt-get install caddy) its table is
# left out, saying so.
#
#   bash bench/vs-h3.sh
#   ROUNDS=1 SECS=2 bash bench/vs-h3.sh
#   SERVERS=caddy bash bench/vs-h3.sh   # one of them (bench, caddy)
#   NO_BUILD=1 bash bench/vs-h3.sh      # the release binaries as they are
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
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
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
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

SERVERS=${SERVERS:-bench caddy}
SERVER_PID=
stop_server() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
    fi
}
trap stop_server EXIT
URL="https://localhost:$PORT/"

# start_bench / start_caddy: the server on core $SERVER_CPU, waited for over HTTP/2.
start_bench() {
    taskset -c "$SERVER_CPU" "$SERVER" "$PORT" "$OUT/server.pem" "$OUT/server.key" \
        2> "$OUT/bench-server.log" &
    SERVER_PID=$!
}
source bench/caddy.sh
start_caddy() {
    CADDY_CPUS=$SERVER_CPU caddy_run "$OUT/caddy" "127.0.0.1:$PORT" "$OUT/server.pem" \
        "$OUT/server.key" 'hello from caddy\n'
    SERVER_PID=$CADDY_PID
}
# served PROTOCOL (h3 or h2): the current server's count of requests it answered.
served() {
    case $SERVER_NAME in
        bench) curl -sf --http2 --cacert "$OUT/ca.pem" "${URL}__count" ;;
        caddy)
            if [[ $1 == h2 ]]; then caddy_count "$OUT/caddy" HTTP/2.0; else caddy_count "$OUT/caddy" HTTP/3.0; fi
            ;;
    esac
}
# check TOOL GENERATOR_COUNT BEFORE PROTOCOL: the server's count since BEFORE against the
# generator's, into counts.txt (polled for up to 2 s: a server logs after it answers).
check() {
    local tool=$1 n=$2 before=$3 delta verdict=ok
    for _ in $(seq 40); do
        delta=$(( $(served "$4") - before ))
        (( delta >= n )) && break
        sleep 0.05
    done
    (( delta >= n && delta - n <= CONNS * STREAMS )) || verdict=MISMATCH
    echo "$SERVER_NAME $tool generator=$n server=$delta $verdict" >> "$OUT/counts.txt"
}

# Prints "requests cpu_seconds" and appends the server's count beside loadlab's to counts.txt.
loadlab_run() { # tool protocol flags...
    local tool=$1 proto=$2 before n
    shift 2
    before=$(served "$proto")
    timed "$LOADLAB" run -q -t1 "$@" -c"$CONNS" --streams "$STREAMS" -d"${SECS}s" \
        --cacert "$OUT/ca.pem" --json "$OUT/$SERVER_NAME-$tool.json" "$URL"
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['measured']; print(r['status_codes'].get('200', 0))" "$OUT/$SERVER_NAME-$tool.json")
    check "$tool" "$n" "$before" "$proto"
    echo "$n $(cpu_seconds)"
}
run_loadlab_h3() { loadlab_run loadlab_h3 h3 --http3; }
run_loadlab_h2() { loadlab_run loadlab_h2 h2 --http2; }
run_oha_h3() {
    local before n
    before=$(served h3)
    timed "$OHA" --http-version 3 --no-tui -c"$CONNS" -p"$STREAMS" -z"${SECS}s" \
        --cacert "$OUT/ca.pem" --output-format json "$URL" > "$OUT/$SERVER_NAME-oha.json" \
        2> "$OUT/$SERVER_NAME-oha.err"
    n=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['statusCodeDistribution'].get('200', 0))" "$OUT/$SERVER_NAME-oha.json")
    check oha_h3 "$n" "$before" h3
    echo "$n $(cpu_seconds)"
}
: > "$OUT/counts.txt"
tools=(loadlab_h3 loadlab_h2)
if [ -x "$OHA" ]; then
    tools+=(oha_h3)
fi
for SERVER_NAME in $SERVERS; do
    if [[ $SERVER_NAME == caddy ]] && ! command -v caddy >/dev/null; then
        echo "caddy is not installed (apt-get install caddy): its table is left out"
        continue
    fi
    "start_$SERVER_NAME"
    for _ in $(seq 50); do
        curl -sf --http2 --cacert "$OUT/ca.pem" "$URL" -o /dev/null && break
        sleep 0.1
    done
    echo
    echo "== $SERVER_NAME"
    alternate "${tools[@]}"
    cp "$OUT/rounds.txt" "$OUT/rounds-$SERVER_NAME.txt"
    stop_server
done
echo
echo "generator's 200s against the server's count (in flight at the end: up to $((CONNS * STREAMS))):"
cat "$OUT/counts.txt"
echo "raw output: $OUT"
! grep -q MISMATCH "$OUT/counts.txt"
