#!/usr/bin/env bash
# Soak: a long open-loop run at a moderate rate; prints loadlab's RSS every $EVERY s (10),
# the slope of a least-squares line through the steady state's samples, and the peak RSS
# apart. The steady state leaves out the warm-up (the first $WARMUP_S s, default 60 or a
# tenth of the run if shorter: allocator arenas and connection buffers still growing) and
# the end (the last $TAIL_S s, default the same: the result being built), so that neither
# start-up nor the final summary passes for a leak. Memory must stay flat.
#
#   bash bench/soak.sh                      # 10 minutes at 2,000 requests/s
#   DURATION=120 RATE=5000 bash bench/soak.sh
#   DURATION=3600 RATE=5000 bash bench/soak.sh   # issue 34's bar: slope < 0.05 MB/min, peak < 64 MB
#   KILL_AFTER=600 DURATION=1200 RATE=5000 bash bench/soak.sh
#       # SIGKILL after 600 s, then `loadlab recover` on the spill file the run left: prints the
#       # intervals, requests and seconds recovered (issue 34's bar: 10 minutes of intervals)
# Loopback only: the server is loadlab's own std-only fixture on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${DURATION:-600}"
KILL_AFTER="${KILL_AFTER:-}"
RATE="${RATE:-2000}"
EVERY="${EVERY:-10}"
edge=$((DURATION / 10 < 60 ? DURATION / 10 : 60))
WARMUP_S="${WARMUP_S:-$edge}"
TAIL_S="${TAIL_S:-$edge}"
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
peak_hwm=0
t=0
while kill -0 "$gen" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$gen/status" 2>/dev/null || echo "")
    # VmHWM: the kernel's own peak, which catches a spike between two samples.
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$gen/status" 2>/dev/null || echo "")
    [ -n "$hwm" ] && peak_hwm=$hwm
    # The timeline leaves memory as it is made: the spill file next to --json grows instead.
    spill=$(stat -c %s "/tmp/soak-$$.json.spill" 2>/dev/null || echo 0)
    # Open file descriptors: the connections (a stall opens more; those idle 30 s close).
    fds=$(find "/proc/$gen/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    [ -n "$rss" ] && { printf "t=%4ds  rss=%7d KiB  spill=%8d bytes  fds=%5d\n" "$t" "$rss" "$spill" "$fds"; samples+=("$t $rss"); }
    if [ -n "$KILL_AFTER" ] && [ "$t" -ge "$KILL_AFTER" ]; then
        kill -KILL "$gen"
        echo "t=${t}s: SIGKILL sent to loadlab (pid $gen)"
        break
    fi
    sleep "$EVERY"; t=$((t + EVERY))
done
wait "$gen" || true
if [ -n "$KILL_AFTER" ]; then
    spill_file=/tmp/soak-$$.json.spill
    echo "spill file left: $(stat -c %s "$spill_file") bytes"
    "$bin/loadlab" recover "$spill_file" -o /tmp/soak-$$.recovered.json >/dev/null
    python3 - "/tmp/soak-$$.recovered.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
tl = r.get("timeline") or []
m = r["measured"]["requests"]
last = max((i["start_s"] + i["duration_s"] for i in tl), default=0)
print(f"recovered: {len(tl)} timeline points up to t={last:.0f} s; completed {m['completed']}, "
      f"failed {m['failed']}; interrupted: {r.get('interrupted')}; warnings: {r.get('warnings')}")
PY
    rm -f "$spill_file" /tmp/soak-$$.json /tmp/soak-$$.recovered.json
    exit 0
fi
echo "peak RSS (VmHWM, last read before the end) $peak_hwm KiB ($((peak_hwm / 1024)) MB)"
printf '%s\n' "${samples[@]}" | awk -v from="$WARMUP_S" -v to="$((DURATION - TAIL_S))" '
    { if ($2 > peak) { peak=$2; peak_t=$1 } if (NR==1) first=$2; last=$2; all++ }
    $1 >= from && $1 <= to { n++; sx+=$1; sy+=$2; sxx+=$1*$1; sxy+=$1*$2; if (n==1) s0=$2; s1=$2 }
    END { printf "highest RSS sampled %d KiB (%.1f MB) at t=%d s; first %d KiB, last %d KiB (%d samples)\n",
                 peak, peak/1024, peak_t, first, last, all;
          if (n < 2) { printf "steady state %d-%d s: too few samples for a slope\n", from, to; exit }
          slope=(n*sxy-sx*sy)/(n*sxx-sx*sx);
          printf "steady state %d-%d s: RSS %d KiB -> %d KiB over %d samples; slope %.2f KiB/min (%.3f MB/min)\n",
                 from, to, s0, s1, n, slope*60, slope*60/1024 }'
python3 -c "import json;r=json.load(open('/tmp/soak-$$.json'));m=r['measured'];print('completed',m['requests']['completed'],'failed',m['requests']['failed'],'p99 us',m['latency_us']['p99'])"
rm -f /tmp/soak-$$.json /tmp/soak-$$.json.spill
