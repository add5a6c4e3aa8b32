#!/usr/bin/env bash
# A fleet's memory over a long run of short intervals: one `loadlab agent --generator` and
# a coordinator (`loadlab run --generators`) on loopback against loadlab's fixture, the
# agent's and the coordinator's RSS read every $EVERY s. A generator used to keep every
# interval of its load (and the coordinator every shard's again); both must now stay flat:
# the printed slope is MB per 1,000 intervals over the run's second half.
#
#   bash bench/fleet-flat.sh                               # 300 s at 100 ms intervals
#   LOADLAB=target/release/loadlab DURATION=600 bash bench/fleet-flat.sh
#
# Loopback only; it stops what it started, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
LOADLAB=${LOADLAB:-target/debug/loadlab}
FIXTURE=${FIXTURE:-target/release/loadlab-fixture}
DURATION=${DURATION:-300}
RATE=${RATE:-1000}
EVERY=${EVERY:-5}
dir=$(mktemp -d /tmp/fleet-flat-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PORT=$port "$FIXTURE" & pids+=($!)
"$LOADLAB" agent --generator --listen 127.0.0.1:0 --state-dir "$dir/gen" >"$dir/agent.out" 2>/dev/null &
agent=$!; pids+=($agent)
for _ in $(seq 200); do grep -q 'sha256:' "$dir/agent.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'https://[^ ]*' "$dir/agent.out" | head -1)
fp=$(grep -o 'sha256:[^ ]*' "$dir/agent.out" | head -1)
printf '[[generator]]\nname = "gen0"\nurl = "%s"\ntoken_file = "gen/token"\nfingerprint = "%s"\n' \
    "$url" "$fp" >"$dir/fleet.toml"
"$LOADLAB" run -q --generators "$dir/fleet.toml" --rate "$RATE" -d "${DURATION}s" \
    --interval 100ms --json "$dir/run.json" "http://127.0.0.1:$port/" &
coord=$!; pids+=($coord)
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
echo "t_s agent_rss_kb coordinator_rss_kb"
t=0
while kill -0 "$coord" 2>/dev/null; do
    echo "$t $(rss $agent) $(rss $coord)" | tee -a "$dir/samples"
    sleep "$EVERY"; t=$((t + EVERY))
done
wait "$coord" || true
python3 - "$dir/samples" "$dir/run.json" "$DURATION" <<'PY'
import json, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
half = [r for r in rows if r[0] >= float(sys.argv[3]) / 2 and r[1] > 0]
def slope(i):
    n = len(half); xs = [r[0] for r in half]; ys = [r[i] / 1024 for r in half]
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
doc = json.load(open(sys.argv[2]))
per_1000 = 1000 * 0.1  # seconds of 1,000 intervals of 100 ms
print(f"intervals in the result: {len(doc['timeline'])}; completed: {doc['measured']['requests']['completed']}")
for i, who in [(1, "agent"), (2, "coordinator")]:
    print(f"{who}: RSS {half[0][i]/1024:.1f} -> {half[-1][i]/1024:.1f} MB over the second half, "
          f"{slope(i) * per_1000:.2f} MB per 1,000 intervals")
PY
