#!/usr/bin/env bash
# How low can a client's CPU per request go here? wrk, loadlab, and a minimal closed-loop
# client on io_uring (bench/uring-floor: no user-space work beyond a clock read, an HDR record
# and finding the response's end; one io_uring_enter per batch of sends and receives), as
# bench/vs-wrk.sh places them: nginx pinned to core 0, each client to core 1, 1 thread, 50
# connections, interleaved rounds, medians, the server's core busy per round.
#
#   bash bench/uring-floor.sh                 # 5 rounds of 10 s
#   ROUNDS=3 SECS=5 bash bench/uring-floor.sh
#
# Do not run it while anything else (a build) uses the CPU: the numbers would be noise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18182}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

for tool in wrk nginx; do
    command -v "$tool" >/dev/null || { echo "uring-floor: $tool is needed (bench/vs-wrk.sh installs it)" >&2; exit 2; }
done
cargo build --release -q -p loadlab-cli
cargo build --release -q --manifest-path bench/uring-floor/Cargo.toml
LOADLAB=$PWD/target/release/loadlab
FLOOR=$PWD/bench/uring-floor/target/release/uring-floor
OUT=$PWD/bench/out/uring-floor-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh
start_nginx bench/nginx.conf "http://127.0.0.1:$PORT/"
URL="http://127.0.0.1:$PORT/"
UA="loadlab/$("$LOADLAB" --version | awk '{print $2}')"

run_wrk() {
    timed wrk -t1 -c"$CONNS" -d"${SECS}s" -H "User-Agent: $UA" -H "Accept: */*" "$URL" > "$OUT/wrk.txt"
    echo "$(awk '/requests in/ {print $1}' "$OUT/wrk.txt") $(cpu_seconds)"
}
run_loadlab() {
    timed "$LOADLAB" run -q -t1 -c"$CONNS" -d"${SECS}s" --json "$OUT/loadlab.json" "$URL"
    echo "$(loadlab_completed "$OUT/loadlab.json") $(cpu_seconds)"
}
# The floor sends loadlab's request (its User-Agent and Accept).
run_uring_floor() {
    timed "$FLOOR" "127.0.0.1:$PORT" "$CONNS" "$SECS" "$UA" > "$OUT/floor.txt" 2>> "$OUT/floor.log"
    echo "$(awk '{print $1}' "$OUT/floor.txt") $(cpu_seconds)"
}

alternate wrk loadlab uring_floor
echo "raw output: $OUT"
