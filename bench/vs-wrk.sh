#!/usr/bin/env bash
# loadlab against wrk, closed loop over HTTP/1.1 keep-alive, on one machine:
# nginx pinned to core 0, each generator pinned to core 1, 1 thread, 50 connections, 10 s,
# alternating tools, 3 rounds. Prints median requests/s, the ratio loadlab/wrk, and generator
# CPU seconds per 100,000 requests. Then holds 10,000 connections for 10 s.
#
#   bash bench/vs-wrk.sh            # the full benchmark (about 2 minutes)
#   ROUNDS=1 SECS=3 bash bench/vs-wrk.sh   # a quick look
#   OLD_LOADLAB=/path/to/old/loadlab bash bench/vs-wrk.sh   # also an older build, same rounds
#   SAME_REQUEST=0 bash bench/vs-wrk.sh    # wrk sends its own request (Host only)
#   BUSY_POLL=1 bash bench/vs-wrk.sh       # also loadlab --busy-poll (polling for responses)
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
source bench/lib.sh
start_nginx bench/nginx.conf "http://127.0.0.1:$PORT/"
URL="http://127.0.0.1:$PORT/"

# wrk sends the request loadlab sends: the same bytes for nginx to read. wrk's own has only
# Host; loadlab's adds User-Agent and Accept, and those two fields cost nginx 1.5% more CPU a
# request (9.25 against 9.39 us, the medians of 3 interleaved rounds of each, perf stat on
# its worker; docs/generator.md). SAME_REQUEST=0 runs wrk's own request.
WRK_HEADERS=()
if [ "${SAME_REQUEST:-1}" = 1 ]; then
    WRK_HEADERS=(-H "User-Agent: loadlab/$("$LOADLAB" --version | awk '{print $2}')" -H "Accept: */*")
fi

# Runs a command pinned to the load core; prints "requests cpu_seconds".
run_wrk() {
    timed wrk -t1 -c"$CONNS" -d"${SECS}s" "${WRK_HEADERS[@]}" "$URL" > "$OUT/wrk.txt"
    local n
    n=$(awk '/requests in/ {print $1}' "$OUT/wrk.txt")
    echo "$n $(cpu_seconds)"
}
run_loadlab() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --json "$OUT/loadlab.json" "$URL"
    local n
    n=$(loadlab_completed "$OUT/loadlab.json")
    echo "$n $(cpu_seconds)"
}

run_loadlab_old() {
    timed "$OLD_LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --json "$OUT/loadlab-old.json" "$URL"
    local n
    n=$(loadlab_completed "$OUT/loadlab-old.json")
    echo "$n $(cpu_seconds)"
}

# BUSY_POLL=1: also loadlab polling for responses (--busy-poll) instead of sleeping between
# them, as it did by default here until polling measured slower over cleartext
# (docs/generator.md); its CPU per request is then its whole core over its rate.
run_loadlab_polling() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --busy-poll \
        --json "$OUT/loadlab-polling.json" "$URL"
    local n
    n=$(loadlab_completed "$OUT/loadlab-polling.json")
    echo "$n $(cpu_seconds)"
}

tools=(wrk loadlab)
[ -n "${OLD_LOADLAB:-}" ] && tools+=(loadlab_old)
[ "${BUSY_POLL:-0}" = 1 ] && tools+=(loadlab_polling)
alternate "${tools[@]}"

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
