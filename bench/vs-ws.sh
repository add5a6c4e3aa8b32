#!/usr/bin/env bash
# loadlab against Artillery (its `ws` engine), WebSocket loads on one machine, against Python's
# `websockets` (crates/loadlab-cli/tests/ws/echo_server.py, which counts the messages it read
# and the most connections it held open). None of wrk, oha, hey, vegeta or h2load speaks
# WebSocket; k6 is not installable here; Artillery is the peer that can make the same loads.
# The server pinned to core 0, each client to core 1.
#
#   - echo: CONNS connections, each sending a message (the same 18-byte JSON text for both)
#     and waiting for its echo before the next (Artillery: a VU per connection, `send` with a
#     `match` on the echo, `loop` MSGS times; loadlab: -c CONNS -n CONNS*MSGS). ROUNDS paired
#     rounds: each one's echoes/s over its own first-to-last window (Artillery's report's
#     first and last counter times, loadlab's measured time) and its CPU per 100k echoes
#     above a run of SMALL messages per connection (so that neither's start-up, Node's is
#     about 2 CPU-s, is charged to its messages); the echoes each completed against the
#     messages the server read;
#   - held: HELD connections opened and held idle HOLD_SECS (Artillery: `think`; loadlab
#     --ws-mode hold, pinging once a minute: not within the hold), the most resident memory
#     of each (/usr/bin/time's maximum RSS) above a hold of 10, per connection, and the
#     connections that makes per GiB; the server's own count of connections open at once.
#
#   bash bench/vs-ws.sh                               # about 3 minutes
#   ROUNDS=2 MSGS=50 HELD=200 bash bench/vs-ws.sh      # a smoke run: the script works
#
# Artillery: `mkdir -p target/artillery && cd target/artillery && npm install --ignore-scripts
# artillery@2` (--ignore-scripts: its Playwright engine downloads a browser at install, which
# the ws engine does not need); the websockets venv: scripts/setup.sh (target/ws-venv). Do not
# run it while anything else (a build) uses the CPU: the numbers would be noise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
CONNS=${CONNS:-50}
MSGS=${MSGS:-400}
SMALL=${SMALL:-10}
HELD=${HELD:-2000}
HOLD_SECS=${HOLD_SECS:-4}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BODY='{"m":"xxxxxxxxxx"}'

ARTILLERY=${ARTILLERY:-$PWD/target/artillery/node_modules/.bin/artillery}
[ -x "$ARTILLERY" ] || { echo "no $ARTILLERY: mkdir -p target/artillery && cd target/artillery && npm install --ignore-scripts artillery@2" >&2; exit 2; }
PYTHON=$PWD/target/ws-venv/bin/python
[ -x "$PYTHON" ] || { echo "no $PYTHON: run scripts/setup.sh (websockets)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 2; }
if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p loadlab-cli
fi
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/vs-ws-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh

# The server, its port, and its counts ("messages peak_open open_now": the peak since the
# last ask).
rm -f "$OUT/server.in"
mkfifo "$OUT/server.in"
ulimit -n 65536 2>/dev/null || true
taskset -c "$SERVER_CPU" "$PYTHON" crates/loadlab-cli/tests/ws/echo_server.py < "$OUT/server.in" > "$OUT/server.out" 2> "$OUT/server.err" &
SERVER_PID=$!
exec 3> "$OUT/server.in"
trap 'exec 3>&- 2>/dev/null; kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$OUT/server.out" ] && break; sleep 0.1; done
URL="ws://127.0.0.1:$(head -1 "$OUT/server.out")/"
server_counts() { echo >&3; sleep 0.3; tail -1 "$OUT/server.out"; }
# The server's message count once it stops moving (a busy server may still be reading).
server_messages() {
    local a b
    a=$(server_counts | awk '{print $1}')
    for _ in $(seq 10); do
        b=$(server_counts | awk '{print $1}')
        [ "$a" = "$b" ] && break
        a=$b
    done
    echo "$b"
}

# A command pinned to the load core: its CPU seconds and most resident memory (KiB) in
# $OUT/time ("user system maxrss").
timed_rss() { /usr/bin/time -f "%U %S %M" -o "$OUT/time" taskset -c "$LOAD_CPU" "$@"; }
max_rss_kib() { awk '{print $3}' "$OUT/time"; }

# Artillery's scenario: $1 connections, each `loop`ing $2 echoes; or, with $3, holding $3 s.
artillery_yaml() { # conns msgs [hold_secs]
    {
        echo "config:"
        echo "  target: \"$URL\""
        echo "  phases:"
        echo "    - duration: 1"
        echo "      arrivalCount: $1"
        echo "  ws:"
        echo "    timeout: 20"
        echo "scenarios:"
        echo "  - engine: ws"
        echo "    flow:"
        if [ -n "${3:-}" ]; then
            echo "      - think: $3"
        else
            echo "      - loop:"
            echo "          - send:"
            echo "              payload: '$BODY'"
            echo "              match:"
            echo "                json: \"\$.m\""
            echo "                value: \"xxxxxxxxxx\""
            echo "        count: $2"
        fi
    } > "$OUT/artillery.yml"
}

# One echo run of $1 messages per connection: "echoes seconds cpu_s server_read".
echo_artillery() { # msgs
    local before
    artillery_yaml "$CONNS" "$1"
    before=$(server_messages)
    timed_rss "$ARTILLERY" run --output "$OUT/artillery.json" "$OUT/artillery.yml" > "$OUT/artillery.log" 2>&1 || true
    python3 - "$OUT/artillery.json" "$(cpu_seconds)" "$(($(server_messages) - before))" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["aggregate"]
c = a["counters"]
secs = (a["lastCounterAt"] - a["firstCounterAt"]) / 1000
print(c.get("websocket.messages_received", 0), f"{secs:.3f}", sys.argv[2], sys.argv[3],
      c.get("vusers.failed", 0))
PY
}
echo_loadlab() { # msgs
    local before
    before=$(server_messages)
    timed_rss "$LOADLAB" run -q -t1 --no-save -c "$CONNS" -n $((CONNS * $1)) --body "$BODY" --json "$OUT/loadlab.json" "$URL" 2> "$OUT/loadlab.err" || true
    python3 - "$OUT/loadlab.json" "$(cpu_seconds)" "$(($(server_messages) - before))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measured"]
print(m["requests"]["completed"], f"{m['duration_s']:.3f}", sys.argv[2], sys.argv[3], m["requests"]["failed"])
PY
}

# A hold of $1 connections: "max_rss_kib server_peak".
hold_artillery() { # conns
    artillery_yaml "$1" 0 "$HOLD_SECS"
    server_counts > /dev/null
    timed_rss "$ARTILLERY" run --output "$OUT/artillery-hold.json" "$OUT/artillery.yml" > "$OUT/artillery-hold.log" 2>&1 || true
    echo "$(max_rss_kib) $(server_counts | awk '{print $2}')"
}
hold_loadlab() { # conns
    server_counts > /dev/null
    timed_rss "$LOADLAB" run -q -t1 --no-save --ws-mode hold --ws-ping 60s -c "$1" -d "${HOLD_SECS}s" --json "$OUT/loadlab-hold.json" "$URL" 2> "$OUT/loadlab-hold.err" || true
    echo "$(max_rss_kib) $(server_counts | awk '{print $2}')"
}

echo "== $(machine); server (Python websockets) on core $SERVER_CPU, each client on core $LOAD_CPU; $(uptime | sed 's/.*load average/load average/')"
echo "artillery $("$ARTILLERY" version 2>/dev/null | awk '/^Artillery:/ {print $2}') ($ARTILLERY)"
"$LOADLAB" --version
echo
echo "== echo: $CONNS connections x $MSGS round trips each ($((CONNS * MSGS)) echoes a run), the baseline $SMALL each"
: > "$OUT/echo.txt"
for tool in artillery loadlab; do
    read -r n secs cpu seen failed < <("echo_$tool" "$SMALL")
    echo "base $tool $n $secs $cpu $seen $failed" >> "$OUT/echo.txt"
    echo "baseline  $tool: $n echoes, $cpu CPU-s (the server read $seen)"
done
for round in $(seq "$ROUNDS"); do
    for tool in artillery loadlab; do
        read -r n secs cpu seen failed < <("echo_$tool" "$MSGS")
        echo "$round $tool $n $secs $cpu $seen $failed" >> "$OUT/echo.txt"
        awk -v r="$round" -v t="$tool" -v n="$n" -v s="$secs" -v c="$cpu" -v v="$seen" -v f="$failed" 'BEGIN {
            printf "round %d  %-10s %8.0f echoes/s  %5.2f CPU-s  %d echoes, the server read %d%s%s\n",
                r, t, (s > 0 ? n / s : 0), c, n, v, (n == v ? "" : " (NOT equal)"), (f > 0 ? sprintf(", %d failed", f) : "") }'
    done
done

echo
echo "== held: $HELD connections held ${HOLD_SECS}s, memory above a hold of 10"
: > "$OUT/held.txt"
for tool in artillery loadlab; do
    read -r base _ < <("hold_$tool" 10)
    read -r rss peak < <("hold_$tool" "$HELD")
    echo "$tool $base $rss $peak" >> "$OUT/held.txt"
    echo "$tool: max RSS $((base / 1024)) MiB with 10, $((rss / 1024)) MiB with $HELD; the server held $peak at once"
done
if [ -f "$OUT/loadlab-hold.json" ]; then
    python3 -c "import json,sys; print('loadlab says:', [n for n in json.load(open(sys.argv[1]))['notes'] if 'held open' in n])" "$OUT/loadlab-hold.json"
fi

echo
echo "== table (medians of $ROUNDS rounds; CPU per 100k echoes above the baseline run; ratios loadlab/artillery, paired, with their 95% interval)"
python3 - "$OUT" "$CONNS" "$MSGS" "$SMALL" "$HELD" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
from paired import describe
out, conns, msgs, small, held = sys.argv[1], *map(int, sys.argv[2:])
base, rounds = {}, {}
for line in open(f"{out}/echo.txt"):
    r, tool, n, secs, cpu, seen, failed = line.split()
    row = (int(n), float(secs), float(cpu), int(seen))
    if r == "base":
        base[tool] = row
    else:
        rounds.setdefault(tool, {})[int(r)] = row
rate = lambda row: row[0] / row[1] if row[1] > 0 else 0.0
def cpu(tool, row):
    n0, _, c0, _ = base[tool]
    return (row[2] - c0) * 100000 / (row[0] - n0) if row[0] > n0 else float("inf")
print("| load | Artillery | loadlab | loadlab / Artillery |")
print("|---|---|---|---|")
common = sorted(set(rounds["artillery"]) & set(rounds["loadlab"]))
med = lambda tool, f: statistics.median(f(rounds[tool][r]) for r in common)
rates = [rate(rounds["loadlab"][r]) / rate(rounds["artillery"][r]) for r in common if rate(rounds["artillery"][r]) > 0]
cpus = [cpu("loadlab", rounds["loadlab"][r]) / cpu("artillery", rounds["artillery"][r]) for r in common]
# A run too small to lift a tool's CPU above its baseline's (Node's start-up alone is about
# 2 CPU-s) has no CPU per echo to compare.
said = lambda rs, **kw: describe(rs, **kw) if rs and all(x > 0 for x in rs) else "n/a: too few echoes above the baseline (MSGS)"

print(f"| echo {conns} x {msgs}: echoes/s | {med('artillery', rate):,.0f} | {med('loadlab', rate):,.0f} | {said(rates)} |")
print(f"| echo: CPU-s per 100k echoes | {med('artillery', lambda row: cpu('artillery', row)):.1f} | "
      f"{med('loadlab', lambda row: cpu('loadlab', row)):.1f} | {said(cpus, lower_is_better=True)} |")
counts = []
for tool in ("artillery", "loadlab"):
    bad = sum(1 for row in rounds[tool].values() if row[0] != row[3])
    total = sum(row[0] for row in rounds[tool].values())
    counts.append(f"{tool}: {total:,} echoes, " + ("all equal to the server's count" if not bad else f"{bad} runs NOT equal"))
print(f"| echo: completed against the server's count | {counts[0]} | {counts[1]} | |")
hold = {}
for line in open(f"{out}/held.txt"):
    tool, b, r, peak = line.split()
    per = (int(r) - int(b)) * 1024 / (held - 10)
    hold[tool] = (per, int(peak))
if len(hold) == 2 and min(h[0] for h in hold.values()) <= 0:
    print(f"| held {held}: memory per connection | n/a: below the noise of a hold of 10 (HELD) | | |")
elif len(hold) == 2:
    per_gib = lambda tool: (1 << 30) / hold[tool][0] if hold[tool][0] > 0 else float("inf")
    print(f"| held {held}: KiB per connection | {hold['artillery'][0] / 1024:.1f} | {hold['loadlab'][0] / 1024:.1f} | "
          f"{hold['loadlab'][0] / hold['artillery'][0]:.2f}x |")
    print(f"| held: connections per GiB | {per_gib('artillery'):,.0f} | {per_gib('loadlab'):,.0f} | "
          f"{per_gib('loadlab') / per_gib('artillery'):.2f}x |")
    print(f"| held: the server's most open at once | {hold['artillery'][1]:,} | {hold['loadlab'][1]:,} | |")
PY
echo "raw output: $OUT"
