#!/usr/bin/env bash
# loadlab against wrk and against the io_uring floor (bench/uring-floor: the least CPU a
# closed-loop client spends per request here), closed loop over HTTP/1.1 keep-alive, on one
# machine: nginx pinned to core 0, each client pinned to core 1, 1 thread, 50 connections,
# 10 s, the three interleaved in each round, 10 rounds. Prints each round, the medians, and
# loadlab's CPU per request and rate against each as paired rounds: the ratio within each
# round, their centre with its exact 95% interval (bench/paired.py, loadlab compare's rule in
# its paired form; 6 rounds at least). Then holds 10,000 connections for 10 s, and closes
# with the headline: loadlab against wrk and against the floor, and whether its CPU per
# request is within 2% of the floor's (GOAL=1.02). Last, the same rounds pipelined 16 deep
# (issue 54): loadlab --pipeline 16 against wrk with TechEmpower's pipeline.lua (the script
# written into the output directory), requests per second and CPU per request.
#
#   bash bench/vs-wrk.sh            # the full benchmark (about 6 minutes)
#   ROUNDS=2 SECS=1 bash bench/vs-wrk.sh   # a smoke run: the script works (no interval)
#   OLD_LOADLAB=/path/to/old/loadlab bash bench/vs-wrk.sh   # also an older build, same rounds
#   SAME_REQUEST=0 bash bench/vs-wrk.sh    # wrk sends its own request (Host only)
#   BUSY_POLL=1 bash bench/vs-wrk.sh       # also loadlab --busy-poll (polling for responses)
#   NO_FLOOR=1 bash bench/vs-wrk.sh        # without the floor (no io_uring here)
#   PIPELINE=0 bash bench/vs-wrk.sh        # without the pipelined rounds (PIPELINE=N: N deep)
#   LOADLAB=target/release/loadlab bash bench/vs-wrk.sh   # that build, as it is (no cargo build)
#
# Do not run it while anything else (a build) uses the CPU: the numbers would be noise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18181}
BIG=${BIG:-10000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
GOAL=${GOAL:-1.02}
PIPELINE=${PIPELINE:-16}

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need wrk || missing+=(wrk)
need nginx || missing+=(nginx-light)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing from Debian's packages: ${missing[*]}"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# LOADLAB=: that loadlab as it is (a release build made before, or another one), not built
# here; else this tree's release build, built first. NO_BUILD=1: nothing built (the floor
# as it is too).
if [ "${NO_BUILD:-0}" != 1 ]; then
    [ -n "${LOADLAB:-}" ] || cargo build --release -q -p loadlab-cli
    [ "${NO_FLOOR:-0}" = 1 ] || cargo build --release -q --manifest-path bench/uring-floor/Cargo.toml
fi
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
if [ ! -x "$LOADLAB" ]; then
    echo "LOADLAB=$LOADLAB is not an executable: give a loadlab binary (cargo build --release -p loadlab-cli makes target/release/loadlab)" >&2
    exit 2
fi
if [ "$PIPELINE" -gt 1 ] && ! "$LOADLAB" run --help | grep -q -- '--pipeline'; then
    echo "$LOADLAB has no --pipeline (older than issue 54): give a newer LOADLAB, or PIPELINE=0" >&2
    exit 2
fi
FLOOR=$PWD/bench/uring-floor/target/release/uring-floor
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

# The floor sends the request loadlab sends (its User-Agent and Accept) whatever SAME_REQUEST.
run_uring_floor() {
    timed "$FLOOR" "127.0.0.1:$PORT" "$CONNS" "$SECS" "loadlab/$("$LOADLAB" --version | awk '{print $2}')" \
        > "$OUT/floor.txt" 2>> "$OUT/floor.log"
    echo "$(awk '{print $1}' "$OUT/floor.txt") $(cpu_seconds)"
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
[ "${NO_FLOOR:-0}" = 1 ] || tools+=(uring_floor)
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
peers=(wrk)
[ "${NO_FLOOR:-0}" = 1 ] || peers+=("uring_floor:$GOAL")
echo
echo "== loadlab, $ROUNDS paired rounds of ${SECS} s ($(machine); nginx on core $SERVER_CPU, each client on core $LOAD_CPU)"
python3 bench/paired.py headline "$OUT/rounds.txt" loadlab "${peers[@]}"
echo "raw output: $OUT"

# Pipelined: wrk through TechEmpower's pipeline.lua (its request written PIPELINE times in one
# string; wrk's -H headers go into each), loadlab with --pipeline. Both read every answer.
run_wrk_pipelined() {
    timed wrk -t1 -c"$CONNS" -d"${SECS}s" "${WRK_HEADERS[@]}" -s "$OUT/pipeline.lua" "$URL" \
        -- "$PIPELINE" > "$OUT/wrk-pipelined.txt"
    echo "$(awk '/requests in/ {print $1}' "$OUT/wrk-pipelined.txt") $(cpu_seconds)"
}
run_loadlab_pipelined() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --pipeline "$PIPELINE" \
        --json "$OUT/loadlab-pipelined.json" "$URL"
    echo "$(loadlab_completed "$OUT/loadlab-pipelined.json") $(cpu_seconds)"
}
if [ "$PIPELINE" -gt 1 ]; then
    cat > "$OUT/pipeline.lua" <<'LUA'
-- TechEmpower's plaintext pipelining: the request PIPELINE times in each write.
init = function(args)
    local r = {}
    for i = 1, tonumber(args[1]) do r[i] = wrk.format() end
    req = table.concat(r)
end
request = function() return req end
LUA
    echo
    echo "== pipelined $PIPELINE deep: $ROUNDS rounds of ${SECS} s, $CONNS connections"
    alternate wrk_pipelined loadlab_pipelined
fi
if [ "$PIPELINE" -gt 1 ]; then
    python3 bench/paired.py headline "$OUT/rounds.txt" loadlab_pipelined wrk_pipelined
fi
