#!/usr/bin/env bash
# Issue 7's bar: the axum target under a Cloud-Run-sized quota (--cpus 0.08 --memory 128Mi)
# and pinned to one core with no quota (--pin 1), 50 connections on /plaintext, measured from
# inside: requests/s, p99, and the server's CPU and memory p99 from loadlab's own sampler.
# Alternates the two setups for $ROUNDS rounds and prints the median of each figure.
#
#   bash bench/limits.sh            # ROUNDS=3 SECS=10 TARGET=rust-axum
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
TARGET=${TARGET:-rust-axum}
OUT=bench/out/limits
mkdir -p "$OUT"
cargo build --release -q -p loadlab-cli
LOADLAB=target/release/loadlab
"$LOADLAB" lab build "$TARGET" >/dev/null

for round in $(seq "$ROUNDS"); do
    "$LOADLAB" run --target "$TARGET" --cpus 0.08 --memory 128Mi -c 50 -d "${SECS}s" -q \
        --json "$OUT/quota-$round.json" /plaintext
    "$LOADLAB" run --target "$TARGET" --pin 1 -c 50 -d "${SECS}s" -q \
        --json "$OUT/pin-$round.json" /plaintext
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'setup':<28} {'requests/s':>11} {'p99':>10} {'CPU p50':>9} {'CPU p99':>9} {'CPU max':>9} {'1s p99':>8} {'1s max':>8} {'mem p99':>9} {'throttled':>10}")
for name, label in [("quota", "--cpus 0.08 --memory 128Mi"), ("pin", "--pin 1 (no quota)")]:
    runs = [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, rounds + 1)]
    med = lambda f: statistics.median(f(r) for r in runs)
    s = lambda r: r["server"]["summary"]
    thr = lambda r: (s(r).get("throttled_periods") or 0) / max(s(r).get("periods") or 1, 1)
    print(f"{label:<28} {med(lambda r: r['measured']['requests']['per_second']):>11.0f}"
          f" {med(lambda r: r['measured']['latency_us']['p99']) / 1e3:>8.2f}ms"
          f" {med(lambda r: s(r)['cpu_cores']['p50']) * 100:>8.1f}%"
          f" {med(lambda r: s(r)['cpu_cores']['p99']) * 100:>8.1f}%"
          f" {max(s(r)['cpu_cores']['max'] for r in runs) * 100:>8.1f}%"
          f" {med(lambda r: s(r)['cpu_cores_per_s']['p99']) * 100:>7.1f}%"
          f" {max(s(r)['cpu_cores_per_s']['max'] for r in runs) * 100:>7.1f}%"
          f" {med(lambda r: s(r)['memory_bytes']['p99']) / 2**20:>7.1f}Mi"
          f" {med(thr) * 100:>9.0f}%")
print("(CPU in % of one core: p50/p99 over 100 ms windows and p99 over whole seconds, median of", rounds,
      "rounds; the max columns are the highest window or second of any round)")
PY
