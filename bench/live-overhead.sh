#!/usr/bin/env bash
# What the live page costs the load (issue 55's bar: a run with the page attached keeps its
# rate within 2% of one without). The same loadlab, closed loop, against nginx: the server
# pinned to core 0, loadlab to core 1, so that loadlab's core is the limit and anything the
# page takes from it shows in the rate. Two arms, interleaved in ROUNDS paired rounds of SECS
# seconds (bench/lib.sh's `alternate`, bench/paired.py's ratio and its exact 95% interval):
#
#   no-page       loadlab run -c CONNS -t 1 -d SECS --pid NGINX_PID URL
#   loadlab-page  the same with --ui, and PAGES readers of its event stream attached for the whole
#                 run (curl -N on /events, pinned to the server's core: a browser is elsewhere)
#
# Then one run with the page of SOAK_S seconds: loadlab's RSS every 5 s, the pages attached
# all along (memory must be flat: the page keeps a bounded window, docs/live.md). Every run,
# both arms and the soak alike, watches nginx's master (`--pid`, bench/lib.sh's NGINX_PID), so
# the soak's memory includes the server sampler's (its windows, and the result's
# `server.samples` at the end: issue 55, what a long run keeps, docs/limits.md), and both
# arms pay for it equally.
#
#   bash bench/live-overhead.sh                    # 8 rounds of 10 s, a soak of 120 s
#   ROUNDS=6 SECS=5 SOAK_S=30 bash bench/live-overhead.sh
#   SOAK_S=3600 ROUNDS=6 bash bench/live-overhead.sh   # the issue's hour
#   SOAK_S=3600 SOAK_RATE=500 ROUNDS=0 bash bench/live-overhead.sh
#       # the hour as an open loop of 500 requests/s: the page's memory and its event stream
#       # over an hour at a few percent of a core, so it can run beside other work (the
#       # page's cost to the rate is the rounds' question, on a quiet machine)
#   LOADLAB=target/debug/loadlab NO_BUILD=1 bash bench/live-overhead.sh
#
# Loopback only. Do not run it while anything else (a build) uses the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-8}
SECS=${SECS:-10}
CONNS=${CONNS:-32}
PAGES=${PAGES:-3}
SOAK_S=${SOAK_S:-120}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
command -v nginx >/dev/null || { echo "no nginx: apt-get install nginx" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p loadlab-cli
fi
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/live-overhead-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
source bench/lib.sh
URL=http://127.0.0.1:$PORT/
start_nginx bench/nginx.conf "$URL"

# A free loopback port for the page, so that its readers know where to attach.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Attaches PAGES readers to the page at $1 once it answers; their PIDs in READERS.
attach_pages() {
    READERS=()
    for _ in $(seq 100); do curl -sf -o /dev/null "http://$1/" && break; sleep 0.02; done
    for _ in $(seq "$PAGES"); do
        taskset -c "$SERVER_CPU" curl -sN -o /dev/null "http://$1/events" &
        READERS+=($!)
    done
}
detach_pages() { for p in "${READERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }

# Each prints "requests cpu_seconds" for bench/lib.sh's `alternate`.
run_no-page() {
    timed "$LOADLAB" run -q -c "$CONNS" -t 1 -d "${SECS}s" --pid "$NGINX_PID" --no-save \
        --json "$OUT/plain.json" "$URL" >/dev/null 2>&1
    echo "$(loadlab_completed "$OUT/plain.json") $(cpu_seconds)"
}
run_loadlab-page() {
    local ui
    ui=127.0.0.1:$(free_port)
    timed "$LOADLAB" run -q -c "$CONNS" -t 1 -d "${SECS}s" --pid "$NGINX_PID" --no-save \
        --ui="$ui" --json "$OUT/page.json" "$URL" >/dev/null 2>&1 &
    local run=$!
    attach_pages "$ui"
    wait "$run"
    detach_pages
    echo "$(loadlab_completed "$OUT/page.json") $(cpu_seconds)"
}

echo "live-overhead: $(machine); $LOADLAB; nginx on core $SERVER_CPU, loadlab on core $LOAD_CPU;"
if [ "$ROUNDS" -gt 0 ]; then
    echo "  $CONNS connections, $ROUNDS rounds of $SECS s, $PAGES pages attached in the page arm"
    alternate no-page loadlab-page | tee "$OUT/table.txt"
fi

if [ "$SOAK_S" -gt 0 ]; then
    ui=127.0.0.1:$(free_port)
    load=(-c "$CONNS")
    [ -n "${SOAK_RATE:-}" ] && load=(--rate "$SOAK_RATE" --max-connections "$CONNS")
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q "${load[@]}" -t 1 -d "${SOAK_S}s" \
        --pid "$NGINX_PID" --no-save --ui="$ui" --json "$OUT/soak.json" "$URL" >/dev/null 2>&1 &
    gen=$!
    attach_pages "$ui"
    # One more reader keeps what it is sent: the intervals it got per minute are the page's
    # delivery over the whole soak.
    curl -sN "http://$ui/events" 2>/dev/null \
        | awk '/^event: interval$/ { n++ } END { print n + 0 }' > "$OUT/intervals-read.txt" &
    kept=$!
    echo "soak with $((PAGES + 1)) pages attached: $SOAK_S s (${load[*]}, --pid $NGINX_PID); loadlab pid $gen"
    t=0
    while kill -0 "$gen" 2>/dev/null; do
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$gen/status" 2>/dev/null || echo "")
        [ -n "$rss" ] && printf "t=%4ds  rss=%7d KiB\n" "$t" "$rss"
        sleep 5
        t=$((t + 5))
    done
    wait "$gen" || true
    detach_pages
    wait "$kept" 2>/dev/null || true
    echo "soak: the kept page read $(cat "$OUT/intervals-read.txt") intervals over $SOAK_S s"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['measured']['requests']; print(f\"soak: {r['completed']} completed, {r['per_second']:.0f} requests/s, {r['failed']} failed\")" "$OUT/soak.json"
fi
echo "kept in $OUT"
