#!/usr/bin/env bash
# What the open loop costs per request, loadlab against oha, on one machine: nginx pinned to
# core 0, each generator pinned to core 1, one loadlab thread, tools interleaved, $ROUNDS
# rounds. Prints, per rate and tool (medians): the rate achieved, CPU-s per 100,000 requests,
# wake-ups per request (voluntary context switches: each is a sleep the thread woke from),
# and, with perf installed, system calls per request by kind; loadlab's send lag p99; then
# the ceiling, the highest rate each tool held (>= 99% of the offered rate, and for loadlab a
# send lag p99 under 1 ms), against the closed loop's requests/s on the same core (loadlab
# -t1 -c 50, measured in the same rounds). The counts mean something on a busy machine; the
# CPU seconds and the ceiling only on a quiet one.
#
#   bash bench/open-loop-cost.sh
#   RATES="5000 20000" SECS=3 ROUNDS=1 bash bench/open-loop-cost.sh    # a quick look
#   LOADLAB=/tmp/old-loadlab TOOLS_RUN="loadlab" bash bench/open-loop-cost.sh   # another build
#   EXTRA="--tick 1ms" bash bench/open-loop-cost.sh                    # loadlab flags to add
#   THREADS=2 TOOLS_RUN=loadlab bash bench/open-loop-cost.sh           # loadlab -t2 (and closed)
#
# Installs oha (crates.io) into bench/tools if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-"5000 20000 50000 75000 100000 125000 150000 200000"}
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-2}
TOOLS_RUN=${TOOLS_RUN:-"loadlab oha"}
CLOSED=${CLOSED:-1}
PORT=${PORT:-18183}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
THREADS=${THREADS:-1}
EXTRA=${EXTRA:-}
TOOLS=$PWD/bench/tools
mkdir -p "$TOOLS"

need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need nginx || missing+=(nginx-light)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
OHA=$(command -v oha || echo "$TOOLS/bin/oha")
if [[ " $TOOLS_RUN " == *" oha "* && ! -x "$OHA" ]]; then
    echo "installing oha from crates.io (a few minutes)"
    cargo install oha --locked --root "$TOOLS" -q
    OHA=$TOOLS/bin/oha
fi
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$PWD/target/release/loadlab
fi
OUT=$PWD/bench/out/open-loop-cost-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh
start_nginx bench/nginx.conf "http://127.0.0.1:$PORT/"
URL="http://127.0.0.1:$PORT/"

# System calls counted by kind (perf's tracepoints), when perf can count them.
KINDS="epoll_wait epoll_pwait clock_nanosleep timerfd_settime sendto write writev recvmsg recvfrom read"
PERF=()
if need perf && perf stat -e raw_syscalls:sys_enter -o /dev/null true 2>/dev/null; then
    events=raw_syscalls:sys_enter
    listed=$(perf list tracepoint 2>/dev/null || true)
    for k in $KINDS; do
        [[ "$listed" == *"syscalls:sys_enter_$k "* ]] && events+=",syscalls:sys_enter_$k"
    done
    PERF=(perf stat -x, -e "$events" -o "$OUT/perf")
fi

# Runs one tool at one rate, pinned; appends "tool rate requests lag_p99_us cpu_s wakeups
# syscalls..." (lag -1 where the tool does not report it; rate 0 for the closed loop).
completed='import json,sys; r=json.load(open(sys.argv[1])); m=r["measured"]; lag=m.get("send_lag_us") or {}; print(m["requests"]["completed"], lag.get("p99", -1))'
measure() { # tool rate
    local tool=$1 rate=$2 n lag=-1
    : > "$OUT/perf"
    case $tool in
    loadlab)
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S %w" -o "$OUT/time" "${PERF[@]}" taskset -c "$LOAD_CPU" \
            "$LOADLAB" run -q -t"$THREADS" --rate "$rate" $EXTRA -d "${SECS}s" --json "$OUT/l.json" "$URL" || true
        read -r n lag < <(python3 -c "$completed" "$OUT/l.json")
        ;;
    closed)
        /usr/bin/time -f "%U %S %w" -o "$OUT/time" "${PERF[@]}" taskset -c "$LOAD_CPU" \
            "$LOADLAB" run -q -t"$THREADS" -c 50 -d "${SECS}s" --json "$OUT/l.json" "$URL" || true
        read -r n lag < <(python3 -c "$completed" "$OUT/l.json")
        ;;
    oha)
        /usr/bin/time -f "%U %S %w" -o "$OUT/time" "${PERF[@]}" taskset -c "$LOAD_CPU" \
            "$OHA" -q "$rate" -z "${SECS}s" -c 50 --latency-correction --no-tui \
            --output-format json "$URL" > "$OUT/o.json" || true
        n=$(python3 -c 'import json,sys; print(sum(json.load(open(sys.argv[1])).get("statusCodeDistribution", {}).values()))' "$OUT/o.json")
        ;;
    esac
    python3 - "$tool" "$rate" "$n" "$lag" "$OUT/time" "$OUT/perf" "$KINDS" >> "$OUT/rows.txt" <<'PY'
import sys
tool, rate, n, lag, time_f, perf_f, kinds = sys.argv[1:]
u, s, w = open(time_f).read().split()[-3:]
counts = {}
for line in open(perf_f):
    f = line.strip().split(",")
    if len(f) > 2 and f[0].replace(".", "").isdigit():
        counts[f[2].split(":")[-1].replace("sys_enter_", "")] = float(f[0])
cols = [counts.get("raw_syscalls", counts.get("sys_enter", -1))] + [counts.get(k, -1) for k in kinds.split()]
print(tool, rate, n, lag, float(u) + float(s), w, *cols)
PY
}

: > "$OUT/rows.txt"
for round in $(seq "$ROUNDS"); do
    if [ "$CLOSED" = 1 ]; then
        measure closed 0
        echo "round $round: $(tail -1 "$OUT/rows.txt" | cut -d' ' -f1-5)"
    fi
    for rate in $RATES; do
        for tool in $TOOLS_RUN; do
            measure "$tool" "$rate"
            echo "round $round: $(tail -1 "$OUT/rows.txt" | cut -d' ' -f1-5)"
        done
    done
done
python3 - "$OUT/rows.txt" "$SECS" "$KINDS" <<'PY'
import statistics, sys
secs, kinds = float(sys.argv[2]), sys.argv[3].split()
groups = {}
for line in open(sys.argv[1]):
    tool, rate, n, lag, cpu, w, *sc = line.split()
    groups.setdefault((tool, int(rate)), []).append((int(n), float(cpu), int(w), [float(x) for x in sc], float(lag)))
med = statistics.median
short = {"epoll_wait": "epoll", "epoll_pwait": "epoll_p", "clock_nanosleep": "nanosleep",
         "timerfd_settime": "timerfd", "recvmsg": "recvmsg", "recvfrom": "recvfrom"}
names = ["all"] + [short.get(k, k) for k in kinds]
have = [i for i in range(len(names)) if any(v[3][i] >= 0 for vs in groups.values() for v in vs)]
print(f"\nper rate and tool, medians of {max(len(v) for v in groups.values())} rounds of {secs:g} s; per request:")
print(f"{'tool':<8} {'rate':>7} {'achieved':>9} {'lag p99 ms':>10} {'CPU-s/100k':>10} {'wake-ups':>8}" +
      ("  syscalls: " + " ".join(f"{names[i]:>8}" for i in have) if have else ""))
held, closed = {}, None
for (tool, rate), vals in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    n = med(v[0] for v in vals)
    ach = n / secs
    cpu = med(v[1] * 1e5 / max(v[0], 1) for v in vals)
    wk = med(v[2] / max(v[0], 1) for v in vals)
    sc = [med(v[3][i] / max(v[0], 1) for v in vals) for i in have]
    lag = med(v[4] for v in vals)
    lag_s = f"{lag / 1000:>10.3f}" if lag >= 0 else f"{'-':>10}"
    print(f"{tool:<8} {rate:>7} {ach:>9.0f} {lag_s} {cpu:>10.2f} {wk:>8.2f}" +
          ("             " + " ".join(f"{x:>8.2f}" for x in sc) if have else ""))
    if tool == "closed":
        closed = ach
    elif ach >= 0.99 * rate and lag < 1000:
        held[tool] = max(held.get(tool, 0), rate)
print()
for tool in sorted({t for t, _ in groups} - {"closed"}):
    ratio = f"; {held.get(tool, 0) / closed:.2f}x the closed loop's {closed:.0f}/s" if closed else ""
    print(f"ceiling {tool}: {held.get(tool, 0)}/s held (>= 99% of the offered rate, send lag "
          f"p99 < 1 ms where reported) of the rates tried{ratio}")
PY
echo "raw rows: $OUT/rows.txt"
