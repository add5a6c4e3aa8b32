#!/usr/bin/env bash
# Issue 17's bar: post 001's three link caps (2, 6 and 10 MBps: megabytes per second on the
# wire) on two lab targets (rust-actix-web, go-nethttp) at 100 and 500 concurrent connections:
# requests/s, p99 and completed-of-issued per cell, with the link's calibration and drops.
# Each target runs in a network namespace of its own behind a veth pair shaped by tbf,
# pinned to CPU 0 (loadlab takes the others). Needs root and iproute2.
#
#   sudo bash bench/bandwidth-caps.sh      # SECS=10 WARMUP=2s PATH_=/json CAPS="2MBps 6MBps 10MBps"
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
WARMUP=${WARMUP:-2s}
PATH_=${PATH_:-/json}
CAPS=${CAPS:-"2MBps 6MBps 10MBps"}
CONNS=${CONNS:-"100 500"}
TARGETS=${TARGETS:-"rust-actix-web go-nethttp"}
OUT=bench/out/bandwidth-caps
mkdir -p "$OUT"
cargo build --release --locked -q -p loadlab-cli
LOADLAB=target/release/loadlab
for target in $TARGETS; do
    "$LOADLAB" lab build "$target" >/dev/null
done

for target in $TARGETS; do
    for cap in $CAPS; do
        for c in $CONNS; do
            "$LOADLAB" run --target "$target" --pin 0 --bandwidth "$cap" -c "$c" \
                -d "${SECS}s" --warmup "$WARMUP" -q --json "$OUT/$target-$cap-$c.json" "$PATH_"
        done
    done
done

python3 - "$OUT" "$TARGETS" "$CAPS" "$CONNS" "$PATH_" <<'PY'
import json, sys
out, targets, caps, conns, path = sys.argv[1], *[a.split() for a in sys.argv[2:5]], sys.argv[5]
print(f"GET {path}, each cap on both directions of the link; one run per cell")
print("| target | cap | connections | requests/s | p99 | completed of issued | calibrated down (wire) | down drops | retransmitted | before the run |")
print("|---|---|---|---|---|---|---|---|---|---|")
for t in targets:
    for cap in caps:
        for c in conns:
            r = json.load(open(f"{out}/{t}-{cap}-{c}.json"))
            m = r["measured"]
            q = m["requests"]
            p99 = m["latency_us"]["p99"] / 1e3 if m.get("latency_us") else float("nan")
            down = r["link"]["down"]
            k = r.get("kernel") or {}
            # The checks before each run sampled the other processes for 0.2 s.
            busy = [c for c in r["environment"].get("checks", [])
                    if c["name"] in ("busy_processes", "steal") and c["status"] != "pass"]
            before = "; ".join(c["found"].split(":")[0] for c in busy) or "quiet"
            print(f"| {t} | {cap} | {c} | {q['per_second']:,.0f} | {p99:.1f} ms"
                  f" | {q['completed']:,} of {q['issued']:,}"
                  f" | {down['calibrated_wire_bytes_per_s'] / 1e6:.3f} MB/s"
                  f" | {down['qdisc_stats']['drops']:,}"
                  f" | {k.get('retransmitted_segments', 0):,} | {before} |")
PY
