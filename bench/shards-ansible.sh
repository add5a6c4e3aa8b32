#!/usr/bin/env bash
# Issue 18's bar: three shards of one open loop at 3 x 5,000 requests/s against one loopback
# server, run through the Ansible playbook (`loadlab dist ansible`, three local hosts), then
# checked: the merged completed count against the server's own count of requests, and the
# merged p99 against the p99 of all the shards' latencies added up by another implementation
# (HdrHistogram_py decodes each shard's histogram; nothing of loadlab's merge is reused).
#
#   bash bench/shards-ansible.sh            # RATE=15000 SECS=10 SHARDS=3
#
# Needs ansible-core in target/ansible-venv (bash scripts/setup.sh); installs hdrhistogram
# (PyPI) into the same virtualenv for the check. Loopback only; stops only what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-15000}
SECS=${SECS:-10}
SHARDS=${SHARDS:-3}
OUT=${OUT:-$(mktemp -d /tmp/loadlab-shards-XXXXXX)}
VENV=target/ansible-venv
mkdir -p "$OUT"

[[ -x $VENV/bin/ansible-playbook ]] || bash scripts/setup.sh
"$VENV/bin/python" -c "import hdrh" 2>/dev/null \
    || "$VENV/bin/pip" install -q --disable-pip-version-check "hdrhistogram==0.10.8"
cargo build --release --locked -q -p loadlab-cli
LOADLAB=$PWD/target/release/loadlab

# The server: loadlab's mock upstream, which counts the requests it answers (GET /__stats).
"$LOADLAB" upstream --port 0 --host 127.0.0.1 > "$OUT/upstream.log" 2>&1 &
UPSTREAM_PID=$!
trap 'kill -INT $UPSTREAM_PID 2>/dev/null; wait $UPSTREAM_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    ADDR=$(grep -o '127\.0\.0\.1:[0-9]*' "$OUT/upstream.log" | head -1 || true)
    [[ -n $ADDR ]] && break
    sleep 0.1
done
[[ -n $ADDR ]] || { echo "the upstream did not start: $(cat "$OUT/upstream.log")" >&2; exit 2; }
curl -sf "http://$ADDR/__stats" > /dev/null

{
    echo "[loadgen]"
    for i in $(seq "$SHARDS"); do
        echo "gen$i ansible_connection=local ansible_python_interpreter=$PWD/$VENV/bin/python"
    done
} > "$OUT/inventory.ini"

CMD=("$LOADLAB" dist ansible --inventory "$OUT/inventory.ini" --hosts loadgen
     --results-dir "$OUT/results" -o "$OUT/run.json"
     --ansible-playbook "$VENV/bin/ansible-playbook"
     --rate "$RATE" -d "${SECS}s" -t 1 "http://$ADDR/")
echo "load: $(uptime)"
echo "+ ${CMD[*]}"
ANSIBLE_HOME="$OUT/ansible-home" ANSIBLE_LOCAL_TEMP="$OUT/ansible-tmp" \
    ANSIBLE_REMOTE_TEMP="$OUT/ansible-tmp" ANSIBLE_NOCOLOR=1 "${CMD[@]}" | tee "$OUT/summary.txt"

curl -sf "http://$ADDR/__stats" > "$OUT/stats.json"
"$VENV/bin/python" - "$OUT" <<'PY'
import glob, json, sys
from hdrh.histogram import HdrHistogram

out = sys.argv[1]
merged = json.load(open(f"{out}/run.json"))
served = json.load(open(f"{out}/stats.json"))["requests"]
m = merged["measured"]
completed = m["requests"]["completed"] + (merged.get("warmup") or {}).get("requests", {}).get("completed", 0)
print(f"\nserver's own count {served}, merged completed {completed}:",
      "EQUAL" if served == completed else "DIFFERENT")

# Each shard's histogram decoded by HdrHistogram_py and added; the merged one decoded too.
shards = sorted(glob.glob(f"{out}/results/shard-*.json"))
added = None
for path in shards:
    h = HdrHistogram.decode(json.load(open(path))["measured"]["histograms"]["latency"])
    if added is None:
        added = HdrHistogram(h.lowest_trackable_value, h.highest_trackable_value,
                             h.significant_figures)
    added.add(h)
mine = HdrHistogram.decode(m["histograms"]["latency"])
same = added.get_total_count() == mine.get_total_count() and all(
    added.get_count_at_index(i) == mine.get_count_at_index(i) for i in range(added.counts_len))
p99_all = added.get_value_at_percentile(99.0) / 1000
p99_merged = mine.get_value_at_percentile(99.0) / 1000
print(f"{len(shards)} shard histograms added by HdrHistogram_py: {added.get_total_count()} latencies;"
      f" bucket by bucket {'IDENTICAL to' if same else 'DIFFERENT from'} the merged histogram")
print(f"p99 of all latencies together {p99_all:.1f} us; merged p99 (HdrHistogram_py) {p99_merged:.1f} us;"
      f" merged p99 in run.json {m['latency_us']['p99']:.1f} us")
s = merged["shards"]
print(f"start spread {s['start_spread_s'] * 1e3:.3f} ms (bound {s['start_spread_bound_s'] * 1e3:.0f} ms)")
for p in merged["parts"]:
    sh = p["shard"]
    print(f"  shard {sh['index']}/{sh['count']}: started {sh['started_wall']} (asked {sh.get('start_at')}),"
          f" {p['per_second']:.1f}/s, p99 {p['p99_us']:.0f} us")
sys.exit(0 if served == completed and same else 1)
PY
echo "files in $OUT"
