#!/usr/bin/env bash
# loadlab against oha and vegeta in an open loop (fixed arrival rates), on one machine:
# nginx pinned to core 0, each generator pinned to core 1, 10 s per run, rates 5,000,
# 20,000 and 50,000 requests/s, tools interleaved, 6 rounds. Prints, per tool and rate:
# achieved rate, send lag p99 where the tool reports it, generator CPU seconds per 100,000
# requests, and p50/p99 latency (oha with --latency-correction, so all three measure from the
# intended time); then loadlab's CPU per request against oha's and vegeta's as paired rounds
# (the ratio within each round and rate, their centre with its exact 95% interval:
# bench/paired.py; 6 rounds at least).
#
# loadlab runs twice: as it is (each request sent when due) and with --tick 1ms, oha's own
# timer resolution (sends batched per millisecond, the wait counted in send lag).
#
#   bash bench/vs-oha-vegeta.sh
#   RATES="5000" SECS=3 ROUNDS=1 bash bench/vs-oha-vegeta.sh   # a quick look
#   GENERATORS="loadlab oha" bash bench/vs-oha-vegeta.sh      # skip some tools
#
# Installs oha (crates.io) and vegeta (Go module proxy, built from the module cache) into
# bench/tools if they are missing. Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RATES=${RATES:-"5000 20000 50000"}
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-6}
GENERATORS=${GENERATORS:-"loadlab loadlab-tick oha vegeta"}
PORT=${PORT:-18182}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
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
if [ ! -x "$OHA" ]; then
    echo "installing oha from crates.io (a few minutes)"
    cargo install oha --locked --root "$TOOLS" -q
    OHA=$TOOLS/bin/oha
fi
VEGETA=$(command -v vegeta || echo "$TOOLS/vegeta")
if [ ! -x "$VEGETA" ]; then
    echo "building vegeta v12.12.0 from the Go module proxy"
    dir=$(go mod download -json github.com/tsenart/vegeta/v12@v12.12.0 | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    (cd "$dir" && GOFLAGS=-mod=mod go build -o "$TOOLS/vegeta" .)
    VEGETA=$TOOLS/vegeta
fi

# NO_BUILD=1: the binary as it is (LOADLAB= another one, e.g. a debug build for a smoke run).
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p loadlab-cli
LOADLAB=${LOADLAB:-$PWD/target/release/loadlab}
OUT=$PWD/bench/out/vs-oha-vegeta-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
source bench/lib.sh
start_nginx bench/nginx.conf "http://127.0.0.1:$PORT/"
URL="http://127.0.0.1:$PORT/"


echo "round tool rate achieved send_lag_p99_ms cpu_s_per_100k p50_ms p99_ms" > "$OUT/results.txt"
for round in $(seq "$ROUNDS"); do
for rate in $RATES; do
    for tool in $GENERATORS; do
        case $tool in
        loadlab|loadlab-tick)
            tick=()
            [ "$tool" = loadlab-tick ] && tick=(--tick 1ms)
            timed "$LOADLAB" run -q -t1 --rate "$rate" "${tick[@]}" -d "${SECS}s" --json "$OUT/l.json" "$URL"
            python3 - "$OUT/l.json" "$(cpu_seconds)" "$rate" "$tool" <<'PY' | sed "s/^/$round /" >> "$OUT/results.txt"
import json, sys
r = json.load(open(sys.argv[1])); m = r["measured"]; cpu = float(sys.argv[2])
n = m["requests"]["completed"] + (r["warmup"] or {"requests": {"completed": 0}})["requests"]["completed"]
print(sys.argv[4], sys.argv[3], round(m["requests"]["per_second"]), round(m["send_lag_us"]["p99"] / 1e3, 3),
      round(cpu * 1e5 / n, 2), round(m["latency_us"]["p50"] / 1e3, 3), round(m["latency_us"]["p99"] / 1e3, 3))
PY
            ;;
        oha)
            timed "$OHA" -q "$rate" -z "${SECS}s" -c 50 --latency-correction --no-tui \
                --output-format json "$URL" > "$OUT/o.json"
            python3 - "$OUT/o.json" "$(cpu_seconds)" "$rate" "$SECS" <<'PY' | sed "s/^/$round /" >> "$OUT/results.txt"
import json, sys
r = json.load(open(sys.argv[1])); cpu = float(sys.argv[2]); secs = float(sys.argv[4])
s = r["summary"]; n = sum(r.get("statusCodeDistribution", {}).values())
p = r["latencyPercentiles"]
print("oha", sys.argv[3], round(n / secs), "-", round(cpu * 1e5 / max(n, 1), 2),
      round(p["p50"] * 1e3, 3), round(p["p99"] * 1e3, 3))
PY
            ;;
        vegeta)
            echo "GET $URL" | timed "$VEGETA" attack -rate="$rate/s" -duration="${SECS}s" > "$OUT/v.bin"
            "$VEGETA" report -type=json < "$OUT/v.bin" > "$OUT/v.json"
            python3 - "$OUT/v.json" "$(cpu_seconds)" "$rate" <<'PY' | sed "s/^/$round /" >> "$OUT/results.txt"
import json, sys
r = json.load(open(sys.argv[1])); cpu = float(sys.argv[2]); l = r["latencies"]
n = r["requests"]
print("vegeta", sys.argv[3], round(r["throughput"]), "-", round(cpu * 1e5 / max(n, 1), 2),
      round(l["50th"] / 1e6, 3), round(l["99th"] / 1e6, 3))
PY
            ;;
        esac
        echo "round $(tail -1 "$OUT/results.txt")"
    done
done
done
echo
python3 - "$OUT/results.txt" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
from paired import describe
rows = [l.split() for l in open(sys.argv[1])][1:]
groups, by_round = {}, {}
for rnd, tool, rate, *vals in rows:
    groups.setdefault((tool, rate), []).append(vals)
    by_round[(rnd, tool, rate)] = vals
def med(vals, i):
    xs = [float(v[i]) for v in vals if v[i] != "-"]
    return statistics.median(xs) if xs else None
print(f"{'tool':<13} {'rate':>6} {'achieved/s':>10} {'lag p99 ms':>10} {'CPU-s/100k':>10} {'p50 ms':>8} {'p99 ms':>8}   (medians of {len(next(iter(groups.values())))} rounds)")
med_by = {}
for (tool, rate), vals in sorted(groups.items(), key=lambda kv: (int(kv[0][1]), kv[0][0])):
    m = [med(vals, i) for i in range(5)]
    med_by[(tool, rate)] = m
    f = lambda x, p: "-" if x is None else f"{x:.{p}f}"
    print(f"{tool:<13} {rate:>6} {f(m[0], 0):>10} {f(m[1], 3):>10} {f(m[2], 2):>10} {f(m[3], 3):>8} {f(m[4], 3):>8}")
print()
for rate in sorted({r for _, r in groups}, key=int):
    o = med_by.get(("oha", rate))
    for tool in ("loadlab", "loadlab-tick"):
        l = med_by.get((tool, rate))
        if not l:
            continue
        line = f"{rate:>6}/s  {tool:<13} held {l[0] / float(rate) * 100:.2f}% of the offered rate, send lag p99 {l[1]:.3f} ms"
        if o:
            line += f"; CPU per request {tool}/oha = {l[2] / o[2]:.2f}x"
        print(line)
print()
# The highest rate each tool held: at least 99% of the offered rate, and a send lag p99 under
# 1 ms where the tool reports one (issue 30's ceiling; bench/open-loop-cost.sh also measures
# the closed loop on the same core to compare it with).
for tool in sorted({t for t, _ in groups}):
    held = [int(r) for (t, r), m in med_by.items()
            if t == tool and m[0] is not None and m[0] >= 0.99 * float(r)
            and (m[1] is None or m[1] < 1.0)]
    print(f"highest rate held by {tool}: {max(held) if held else 0}/s of the rates tried")
# Each loadlab arm's CPU per request against each peer's in the same round and at the same
# rate (bench/paired.py: the centre of the rounds' ratios and its exact 95% interval). The
# rate is fixed in an open loop: the achieved rates compare nothing while both hold it.
print("\npaired rounds, CPU per request (each round's ratio to the peer's run at the same rate):")
rounds = sorted({rnd for rnd, _, _ in by_round}, key=int)
for rate in sorted({r for _, r in groups}, key=int):
    for ours in ("loadlab", "loadlab-tick"):
        for peer in ("oha", "vegeta"):
            ratios = [float(by_round[(r, ours, rate)][2]) / float(by_round[(r, peer, rate)][2])
                      for r in rounds
                      if (r, ours, rate) in by_round and (r, peer, rate) in by_round
                      and float(by_round[(r, peer, rate)][2]) > 0]
            if ratios:
                print(f"{rate:>6}/s  {ours}/{peer}: {describe(ratios, lower_is_better=True)}")
PY
echo "raw output: $OUT"
