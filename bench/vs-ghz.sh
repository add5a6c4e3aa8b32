#!/usr/bin/env bash
# loadlab against ghz (github.com/bojand/ghz), gRPC over h2c on one machine, against two
# servers: grpcio's (Python, which no one here wrote: grpcio-health-checking's Health/Check,
# unary, and crates/loadlab-cli/tests/grpc/stream_server.py's Streams/Chat, bidirectional, by
# grpcio's generic handlers) and loadlab's mock upstream (tonic's server side: Upstream/Call
# and Upstream/Chat). The server pinned to core 0, each client to core 1, both clients with
# the same connections and calls in flight (CONNS connections, CONC calls: ghz --connections
# --concurrency, loadlab -c --streams) and one core (ghz --cpus 1, loadlab -t1); a
# bidirectional call sends MSGS messages and reads MSGS answers (ghz --stream-call-count,
# loadlab --grpc-messages), each client sending them without waiting for the answers (ghz's
# way; loadlab --grpc-message-rate max; PING_PONG=1: loadlab's default, each message after
# the last one's answer, which costs a round trip per message). For each case:
#
#   - ROUNDS paired rounds of SECS seconds, the two interleaved (bench/lib.sh's `alternate`):
#     each one's calls/s and CPU per 100k calls (user + system, /usr/bin/time), the server's
#     core, and loadlab against ghz as paired ratios with their 95% interval;
#   - then one count-bound run of each (COUNT calls): the calls each says completed against
#     the calls the server counted (grpcio: an interceptor; the upstream: /__stats).
#
#   bash bench/vs-ghz.sh                        # the full benchmark (about 8 minutes)
#   ROUNDS=2 SECS=1 COUNT=500 bash bench/vs-ghz.sh   # a smoke run: the script works
#   CASES="upstream-unary grpcio-bidi" bash bench/vs-ghz.sh
#
# ghz: `go install github.com/bojand/ghz/cmd/ghz@latest` (found in $(go env GOPATH)/bin);
# grpcio: the venv scripts/setup.sh makes (target/grpc-venv). Do not run it while anything
# else (a build) uses the CPU: the numbers would be noise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
SECS=${SECS:-5}
COUNT=${COUNT:-20000}
CONNS=${CONNS:-2}
CONC=${CONC:-50}
MSGS=${MSGS:-10}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
CASES=${CASES:-"grpcio-unary grpcio-bidi upstream-unary upstream-bidi"}

GHZ=${GHZ:-$(command -v ghz || echo "$(go env GOPATH 2>/dev/null)/bin/ghz")}
[ -x "$GHZ" ] || { echo "no ghz: go install github.com/bojand/ghz/cmd/ghz@latest" >&2; exit 2; }
PYTHON=$PWD/target/grpc-venv/bin/python
[ -x "$PYTHON" ] || { echo "no $PYTHON: run scripts/setup.sh (grpcio)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p loadlab-cli
fi
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/vs-ghz-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh
TESTS=$PWD/crates/loadlab-cli/tests/grpc
UPSTREAM_PROTO=$PWD/crates/loadlab-upstream/proto/upstream.proto
SERVER_PID=
# bench/lib.sh's server_cpu reads the server's pid (and its children's) from NGINX_PID.
NGINX_PID=
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    exec 3>&- 2>/dev/null || true
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID= NGINX_PID=
}
trap stop_server EXIT

start_grpcio() {
    rm -f "$OUT/grpcio.in"
    mkfifo "$OUT/grpcio.in"
    taskset -c "$SERVER_CPU" "$PYTHON" "$TESTS/stream_server.py" < "$OUT/grpcio.in" > "$OUT/grpcio.out" 2> "$OUT/grpcio.err" &
    SERVER_PID=$!
    exec 3> "$OUT/grpcio.in"
    for _ in $(seq 100); do [ -s "$OUT/grpcio.out" ] && break; sleep 0.1; done
    ADDR="127.0.0.1:$(head -1 "$OUT/grpcio.out")"
}
start_upstream() {
    taskset -c "$SERVER_CPU" "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do grep -q '^listening on ' "$OUT/upstream.log" 2>/dev/null && break; sleep 0.1; done
    ADDR=$(awk '/^listening on / {print $3; exit}' "$OUT/upstream.log" | sed 's|^http://||')
}
# The calls the server has counted so far.
server_calls() {
    case $SERVER in
    grpcio) echo >&3; sleep 0.3; tail -1 "$OUT/grpcio.out" | awk '{print $1}' ;;
    upstream) curl -sf "http://$ADDR/__stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['grpc_requests'])" ;;
    esac
}

# One case's method, schema and message, for both clients.
set_case() { # server-kind
    SERVER=${1%-*} KIND=${1#*-}
    case $1 in
    grpcio-unary) METHOD=grpc.health.v1.Health/Check PROTO=$TESTS/health.proto DATA='{"service": ""}' ;;
    grpcio-bidi) METHOD=loadlab.test.v1.Streams/Chat PROTO=$TESTS/streams.proto DATA='{}' ;;
    upstream-unary) METHOD=loadlab.upstream.v1.Upstream/Call PROTO=$UPSTREAM_PROTO DATA='{}' ;;
    upstream-bidi) METHOD=loadlab.upstream.v1.Upstream/Chat PROTO=$UPSTREAM_PROTO DATA='{}' ;;
    esac
    STREAM_GHZ=() STREAM_LOADLAB=()
    if [ "$KIND" = bidi ]; then
        STREAM_GHZ=(--stream-call-count "$MSGS")
        STREAM_LOADLAB=(--grpc-messages "$MSGS")
        [ "${PING_PONG:-0}" = 1 ] || STREAM_LOADLAB+=(--grpc-message-rate max)
    fi
}

ghz_args() { # bound...: the rest of ghz's command line
    # ghz's parser has protobuf's well-known types built in, as loadlab has.
    echo --insecure --proto "$PROTO" --call "$METHOD" \
        --cpus 1 --connections "$CONNS" --concurrency "$CONC"
}
# ghz's calls that ended OK, from its JSON report.
ghz_ok() {
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['statusCodeDistribution'].get('OK', 0))" "$1"
}
run_ghz() {
    # shellcheck disable=SC2046
    timed "$GHZ" $(ghz_args) -d "$DATA" "${STREAM_GHZ[@]}" -z "${SECS}s" -O json -o "$OUT/ghz.json" "$ADDR" 2> "$OUT/ghz.err" || true
    echo "$(ghz_ok "$OUT/ghz.json") $(cpu_seconds)"
}
loadlab_args() {
    echo run -q -t1 --grpc "$METHOD" --proto "$PROTO" -c "$CONNS" --streams $((CONC / CONNS))
}
run_loadlab() {
    # shellcheck disable=SC2046
    timed "$LOADLAB" $(loadlab_args) --data "$DATA" "${STREAM_LOADLAB[@]}" -d "${SECS}s" --json "$OUT/loadlab.json" "http://$ADDR" 2> "$OUT/loadlab.err" || true
    echo "$(loadlab_completed "$OUT/loadlab.json") $(cpu_seconds)"
}

# The server's count once it stopped moving: a timed round's calls still in flight when it
# ended (abandoned by the client) may still reach a busy server's handlers.
settled_calls() {
    local a b
    a=$(server_calls)
    for _ in $(seq 20); do
        sleep 0.5
        b=$(server_calls)
        [ "$a" = "$b" ] && break
        a=$b
    done
    echo "$b"
}

# COUNT calls from each, the server's count before and after: "tool completed server"; the
# reports are kept as $case-ghz-n.json and $case-loadlab-n.json.
count_check() {
    local before after n
    before=$(settled_calls)
    # shellcheck disable=SC2046
    taskset -c "$LOAD_CPU" "$GHZ" $(ghz_args) -d "$DATA" "${STREAM_GHZ[@]}" -n "$COUNT" -O json -o "$OUT/ghz-n.json" "$ADDR" 2>> "$OUT/ghz.err" || true
    after=$(settled_calls)
    echo "ghz $(ghz_ok "$OUT/ghz-n.json") $((after - before))"
    before=$after
    # shellcheck disable=SC2046
    taskset -c "$LOAD_CPU" "$LOADLAB" $(loadlab_args) --data "$DATA" "${STREAM_LOADLAB[@]}" -n "$COUNT" --json "$OUT/loadlab-n.json" "http://$ADDR" 2>> "$OUT/loadlab.err" || true
    after=$(settled_calls)
    echo "loadlab $(loadlab_completed "$OUT/loadlab-n.json") $((after - before))"
    cp "$OUT/ghz-n.json" "$OUT/$case-ghz-n.json"
    cp "$OUT/loadlab-n.json" "$OUT/$case-loadlab-n.json"
}

echo "== $(machine); server on core $SERVER_CPU, each client on core $LOAD_CPU; $CONNS connections x $CONC calls in flight; ${SECS}s rounds; $(uptime | sed 's/.*load average/load average/')"
echo "ghz $("$GHZ" --version 2>&1) ($GHZ)"
"$LOADLAB" --version
summary=()
for case in $CASES; do
    set_case "$case"
    "start_$SERVER"
    NGINX_PID=$SERVER_PID
    echo
    echo "== $case: $METHOD on $SERVER ($ADDR)$([ "$KIND" = bidi ] && echo ", $MSGS messages each way per call")"
    alternate ghz loadlab | tee "$OUT/$case.summary"
    cp "$OUT/rounds.txt" "$OUT/$case.rounds"
    count_check > "$OUT/$case.counts"
    awk -v n="$COUNT" '{ printf "count  %-8s %d of %d calls completed; the server counted %d: %s\n", $1, $2, n, $3, ($2 == $3 ? "equal" : "NOT equal") }' "$OUT/$case.counts"
    python3 - "$OUT/$case-ghz-n.json" "$OUT/$case-loadlab-n.json" <<'PY'
import json, sys
g, l = (json.load(open(p)) for p in sys.argv[1:])
bad = {k: v for k, v in g["statusCodeDistribution"].items() if k != "OK"}
if bad or g.get("errorDistribution"):
    print("  ghz failures:", bad, g.get("errorDistribution"))
m = l["measured"]
if m["errors"] or l["in_flight_at_end"]:
    print("  loadlab failures:", m["errors"], m.get("error_details"), "in flight at end", l["in_flight_at_end"])
PY
    summary+=("$case")
    stop_server
done

echo
echo "== table (medians of $ROUNDS rounds; CPU per 100k calls; ratios loadlab/ghz, paired, with their 95% interval)"
python3 - "$OUT" "$SECS" "${summary[@]}" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
from paired import paired_ratio
out, secs, cases = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
print("| case | ghz calls/s | loadlab calls/s | rate ratio | ghz CPU-s/100k | loadlab CPU-s/100k | CPU ratio | COUNT calls: completed/server's |")
print("|---|---|---|---|---|---|---|---|")
for case in cases:
    runs = {}
    for line in open(f"{out}/{case}.rounds"):
        r, tool, n, cpu, _ = line.split()
        runs.setdefault(tool, {})[int(r)] = (float(n), float(cpu))
    rounds = sorted(set(runs["ghz"]) & set(runs["loadlab"]))
    med = lambda tool, f: statistics.median(f(*runs[tool][r]) for r in rounds)
    rate = lambda n, c: n / secs
    cpu = lambda n, c: c * 100000 / n if n else float("inf")
    def ratio(f):
        rs = [f(*runs["loadlab"][r]) / f(*runs["ghz"][r]) for r in rounds if f(*runs["ghz"][r]) > 0]
        est, iv = paired_ratio(rs)[:2]
        return f"{est:.2f}x" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else "")
    counts = []
    for line in open(f"{out}/{case}.counts"):
        tool, completed, server = line.split()
        counts.append(f"{tool} {completed}/{server}" + ("" if completed == server else " (!)"))
    print(f"| {case} | {med('ghz', rate):,.0f} | {med('loadlab', rate):,.0f} | {ratio(rate)} | "
          f"{med('ghz', cpu):.2f} | {med('loadlab', cpu):.2f} | {ratio(cpu)} | {', '.join(counts)} |")
PY
echo "raw output: $OUT"
