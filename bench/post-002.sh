#!/usr/bin/env bash
# Post 002's two tables, measured by loadlab on rust-actix-web with WORKERS and BACKLOG set as
# the post set them (where this machine allows), each with the capacity found automatically:
#
#   1. plain text, backlog 256, 128 workers: offered 1,000 to 15,000 requests/s;
#   2. a handler that sleeps 100 ms blocking its worker thread (/block?ms=100, the post's
#      thread::sleep) against one that waits 100 ms on a timer (/delay?ms=100), with
#      (backlog 256, 128 workers), (backlog 2,048, 128 workers) and (backlog 1, 512
#      workers): the post's backlog 0 is below the contract's minimum of 1 (Linux treats
#      listen(0) as a backlog of 1 anyway), and its 1,024 workers are above actix-web 4's
#      limit of 512 (the post ran actix-web 0.7).
#
# The server is pinned to core 0, loadlab to core 1. Each probe warms up 1 s and measures
# 5 s (PROBE_SECS). Open loop, uniform arrivals, latency from when each request was due.
#
#   bash bench/post-002.sh                 # both tables, about 20 minutes
#   (REPEATS rounds per capacity search, 2; BUDGET per search, 4m)
#   TABLES=1 PROBE_SECS=3 bash bench/post-002.sh
#   TABLES=2 SETTINGS="1 512 2000,10000,15000" bash bench/post-002.sh   # one setting of table 2
set -euo pipefail
cd "$(dirname "$0")/.."
PROBE_SECS=${PROBE_SECS:-5}
TABLES=${TABLES:-"1 2"}
OUT=$PWD/bench/out/post-002-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true

cargo build --release -q -p loadlab-cli
LOADLAB=$PWD/target/release/loadlab
"$LOADLAB" lab build rust-actix-web > "$OUT/build.log" 2>&1

common=(--target rust-actix-web --pin 0 -d "${PROBE_SECS}s" --warmup 1s --no-save -q)

sweep() { # name backlog workers path rates
    echo "== sweep $1: BACKLOG=$2 WORKERS=$3 $4"
    taskset -c 1 "$LOADLAB" sweep "${common[@]}" --env "BACKLOG=$2" --env "WORKERS=$3" \
        --rates "$5" --slo "$SLO" --json "$OUT/$1-sweep.json" "$4" || true
}

capacity() { # name backlog workers path start
    echo "== capacity $1: BACKLOG=$2 WORKERS=$3 $4 ($SLO)"
    taskset -c 1 "$LOADLAB" capacity "${common[@]}" --env "BACKLOG=$2" --env "WORKERS=$3" \
        --slo "$SLO" --start "$5" --repeats "${REPEATS:-2}" --budget "${BUDGET:-4m}" \
        --json "$OUT/$1-capacity.json" --report "$OUT/$1-capacity.html" "$4" || true
}

for table in $TABLES; do
    case $table in
    1)
        SLO="p99<50ms"
        sweep plaintext 256 128 /plaintext 1000,5000,10000,12000,14000,15000
        capacity plaintext 256 128 /plaintext 1000
        ;;
    2)
        SLO="p99<300ms"
        SETTINGS=${SETTINGS:-"256 128 1000,2000;2048 128 1200,2000;1 512 2000,10000,15000"}
        IFS=';' read -ra settings <<< "$SETTINGS"
        for setting in "${settings[@]}"; do
            read -r backlog workers rates <<< "$setting"
            for endpoint in block delay; do
                name=$endpoint-b$backlog-w$workers
                sweep "$name" "$backlog" "$workers" "/$endpoint?ms=100" "$rates"
                # The capacity of each endpoint at the post's first and last settings.
                if [ "$backlog" != 2048 ]; then
                    capacity "$name" "$backlog" "$workers" "/$endpoint?ms=100" 250
                fi
            done
        done
        ;;
    esac
done
echo "documents in $OUT"
