#!/usr/bin/env bash
# Issue 31's bar: a lab target (go-nethttp, whose /metrics is client_golang's) loaded for
# $DURATION s with --server-metrics on its own /metrics and --metrics-out to a local
# Prometheus (Debian's, remote-write receiver on); then PromQL over the run beside loadlab's
# own summary: completed (must be equal), the mean achieved rate, and the server's CPU as its
# own counter says (scraped by loadlab) beside loadlab's /proc sampling of the same process.
#
#   bash bench/metrics-bar.sh                    # 30 s at 2,000 requests/s
#   DURATION=10 RATE=5000 LOADLAB=target/debug/loadlab bash bench/metrics-bar.sh
# Loopback only; the server on core 0 and loadlab on core 1 when there are two.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-30}"
RATE="${RATE:-2000}"
LOADLAB="${LOADLAB:-target/release/loadlab}"
[ "$LOADLAB" = target/release/loadlab ] && cargo build --release --locked -q -p loadlab-cli
command -v prometheus >/dev/null || { echo "prometheus is missing: apt-get install prometheus" >&2; exit 2; }
"$LOADLAB" lab build go-nethttp >/dev/null
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 300); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done; echo "$1 did not answer" >&2; exit 1; }

port=$(free_port)
(cd targets/go-nethttp && PORT=$port CONTENT_DIR=../content exec taskset -c 0 ./server) >"$tmp/server.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$port/healthz"

prom_port=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$tmp/prometheus.yml"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address="127.0.0.1:$prom_port" --web.enable-remote-write-receiver \
    >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$prom_port/-/ready"

echo "go-nethttp on 127.0.0.1:$port (core 0), Prometheus on 127.0.0.1:$prom_port;" \
    "loadlab --rate $RATE for $DURATION s (core 1)"
taskset -c 1 "$LOADLAB" run --rate "$RATE" -d "${DURATION}s" \
    --server-metrics "http://127.0.0.1:$port/metrics" \
    --metrics-out "prometheus+remote-write://127.0.0.1:$prom_port/api/v1/write" \
    --metrics-label bench=metrics-bar --json "$tmp/run.json" \
    "http://127.0.0.1:$port/plaintext" | tee "$tmp/summary.txt"
sleep 2   # the last remote-write batch

query() {
    curl -fsG "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "no answer")'
}
window="$((DURATION + 30))s"
q_completed="max(max_over_time(loadlab_requests_completed_total{bench=\"metrics-bar\"}[$window]))"
q_rate="quantile(0.5, quantile_over_time(0.5, loadlab_achieved_rate_per_second{bench=\"metrics-bar\"}[$window]))"
echo
echo "PromQL: $q_completed = $(query "$q_completed")"
echo "PromQL (the median interval): $q_rate = $(query "$q_rate")"
python3 - "$tmp/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
q = r["measured"]["requests"]
print(f"loadlab's JSON: completed {q['completed']}, failed {q['failed']}")
PY
