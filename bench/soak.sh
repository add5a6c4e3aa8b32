#!/usr/bin/env bash
# Soak: a long open-loop run at a moderate rate; prints loadlab's RSS every 10 s and the
# slope of a least-squares line through the samples. Memory must stay flat: HDR histograms
# are fixed-size, per-interval histograms are kept compressed, and nothing grows per request.
#
#   bash bench/soak.sh                      # 10 minutes at 2,000 requests/s
#   DURATION=120 RATE=5000 bash bench/soak.sh
# Loopback only: the server is loadlab's own std-only fixture on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-600}"
RATE="${RATE:-2000}"
cargo build --release --locked -q -p loadlab-cli
bin=target/release
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PORT=$port "$bin/loadlab-fixture" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
"$bin/loadlab" run --rate "$RATE" -d "${DURATION}s" -q --json /tmp/soak-$$.json "http://127.0.0.1:$port/" &
gen=$!
echo "soak: $RATE requests/s for $DURATION s; loadlab pid $gen"
samples=()
t=0
while kill -0 "$gen" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$gen/status" 2>/dev/null || echo "")
    [ -n "$rss" ] && { printf "t=%4ds  rss=%7d KiB\n" "$t" "$rss"; samples+=("$t $rss"); }
    sleep 10; t=$((t + 10))
done
wait "$gen" || true
printf '%s\n' "${samples[@]}" | awk '
    { n++; sx+=$1; sy+=$2; sxx+=$1*$1; sxy+=$1*$2; if (n==1) first=$2; last=$2 }
    END { if (n < 2) { print "too few samples"; exit }
          slope=(n*sxy-sx*sy)/(n*sxx-sx*sx);
          printf "RSS %d KiB -> %d KiB over %d samples; slope %.2f KiB/min\n", first, last, n, slope*60 }'
python3 -c "import json;r=json.load(open('/tmp/soak-$$.json'));m=r['measured'];print('completed',m['requests']['completed'],'failed',m['requests']['failed'],'p99 us',m['latency_us']['p99'])"
rm -f /tmp/soak-$$.json
