#!/usr/bin/env bash
# What one request costs each generator, in counts a loaded machine distorts little: system
# calls by kind and context switches (kernel tracepoints, perf stat), CPU time (task-clock;
# the one figure load does inflate), for the generator and for the nginx worker serving it,
# and user-space instructions (callgrind: the difference of two runs of N1 and N2 requests,
# so start-up and the summary cancel out). Same set-up as bench/vs-wrk.sh: nginx pinned to
# core 0, each generator to core 1, 1 thread, 50 connections; loadlab runs a fixed count
# (-n), wrk a duration and is divided by its count.
#
#   bash bench/generator-counts.sh                 # perf counts and callgrind
#   CALLGRIND=0 bash bench/generator-counts.sh     # perf counts only
#   OLD_LOADLAB=/path/to/old/loadlab bash bench/generator-counts.sh
#
# Needs perf (tracepoints: root or perf_event_paranoid <= 1) and valgrind for CALLGRIND=1.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
WRK_SECS=${WRK_SECS:-5}
N1=${N1:-20000}
N2=${N2:-40000}
CONNS=${CONNS:-50}
PORT=${PORT:-18182}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
CALLGRIND=${CALLGRIND:-1}
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/generator-counts-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh
start_nginx bench/nginx.conf "http://127.0.0.1:$PORT/"
URL="http://127.0.0.1:$PORT/"
WORKER=$(pgrep -P "$(cat "$OUT/nginx.pid")" | head -1)
EVENTS=task-clock,context-switches,raw_syscalls:sys_enter
for call in read write recvfrom sendto epoll_wait epoll_ctl; do
    EVENTS+=",syscalls:sys_enter_$call"
done

# Runs one generator under perf stat (and the nginx worker beside it); prints its table row.
measure() { # name requests-or-"wrk" command...
    local name=$1 count=$2
    shift 2
    perf stat -x, -e "$EVENTS" -p "$WORKER" -o "$OUT/$name.nginx.csv" -- \
        perf stat -x, -e "$EVENTS" -o "$OUT/$name.csv" -- taskset -c "$LOAD_CPU" "$@" \
        > "$OUT/$name.out" 2>&1
    if [ "$count" = wrk ]; then
        count=$(awk '/requests in/ {print $1}' "$OUT/$name.out")
    fi
    python3 - "$OUT/$name.csv" "$OUT/$name.nginx.csv" "$name" "$count" <<'PY'
import sys
def read(path):
    d = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 2 and f[0] and f[0][0].isdigit():
            d[f[2].split(":")[-1]] = float(f[0])
    return d
gen, ngx, name, n = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3], int(sys.argv[4])
per = lambda d, k: d.get(k, 0.0) / n
calls = lambda d: " ".join(f"{per(d, 'sys_enter_' + c):.2f}" for c in
                           ("read", "write", "recvfrom", "sendto", "epoll_wait", "epoll_ctl"))
print(f"| {name} | {n:,} | {per(gen, 'sys_enter'):.2f} | {calls(gen)} | "
      f"{per(gen, 'context-switches'):.3f} | {per(gen, 'task-clock') * 1000:.2f} | "
      f"{per(ngx, 'sys_enter'):.2f} | {per(ngx, 'sys_enter_epoll_wait'):.3f} | "
      f"{per(ngx, 'task-clock') * 1000:.2f} |")
PY
}

echo "Per request. syscalls: read write recvfrom sendto epoll_wait epoll_ctl"
echo "| generator | requests | syscalls | by kind | context switches | CPU us (task-clock) | nginx syscalls | nginx epoll_wait | nginx CPU us |"
echo "|---|---|---|---|---|---|---|---|---|"
measure wrk wrk wrk -t1 -c"$CONNS" -d"${WRK_SECS}s" "$URL"
measure loadlab "$N" "$LOADLAB" run -q -t1 -c"$CONNS" -n "$N" "$URL"
measure loadlab-no-busy-poll "$N" "$LOADLAB" run -q -t1 -c"$CONNS" -n "$N" --no-busy-poll "$URL"
if [ -n "${OLD_LOADLAB:-}" ]; then
    measure loadlab-old "$N" "$OLD_LOADLAB" run -q -t1 -c"$CONNS" -n "$N" "$URL"
    measure loadlab-old-no-busy-poll "$N" "$OLD_LOADLAB" run -q -t1 -c"$CONNS" -n "$N" \
        --no-busy-poll "$URL"
fi

[ "$CALLGRIND" = 1 ] || { echo "raw output: $OUT"; exit 0; }
# User-space instructions per request: callgrind's count of a run of N2 requests minus one
# of N1, over N2 - N1 (wrk: runs of 2 s and 4 s, over the difference of their counts).
# Without busy-polling, so that spinning while idle is not counted as work.
grind() { # file command...
    local file=$1
    shift
    taskset -c "$LOAD_CPU" valgrind --tool=callgrind --callgrind-out-file="$file" "$@" \
        > "$file.out" 2>&1
}
instructions() { # name n1-file n1 n2-file n2
    python3 bench/callgrind-per-request.py "$2" "$3" "$4" "$5" 25 > "$OUT/$1.functions.txt"
    echo "$1: $(head -1 "$OUT/$1.functions.txt")"
}
grind "$OUT/wrk.cg.1" wrk -t1 -c"$CONNS" -d2s "$URL"
grind "$OUT/wrk.cg.2" wrk -t1 -c"$CONNS" -d4s "$URL"
w1=$(awk '/requests in/ {print $1}' "$OUT/wrk.cg.1.out")
w2=$(awk '/requests in/ {print $1}' "$OUT/wrk.cg.2.out")
instructions wrk "$OUT/wrk.cg.1" "$w1" "$OUT/wrk.cg.2" "$w2"
for tool in loadlab ${OLD_LOADLAB:+loadlab-old}; do
    bin=$LOADLAB
    [ "$tool" = loadlab-old ] && bin=$OLD_LOADLAB
    for n in "$N1" "$N2"; do
        grind "$OUT/$tool.cg.$n" "$bin" run -q -t1 -c"$CONNS" -n "$n" --no-busy-poll "$URL"
    done
    instructions "$tool" "$OUT/$tool.cg.$N1" "$N1" "$OUT/$tool.cg.$N2" "$N2"
done
echo "by function: $OUT/*.functions.txt"
echo "raw output: $OUT"
