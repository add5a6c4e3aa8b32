#!/usr/bin/env bash
# Mistake 3 (post 002): the load generator itself was the limit (tsung needed four machines).
# Here loadlab is pinned to core 1 inside a cgroup with a tiny CPU quota (wrong) and then given
# the core (right), both at the same open-loop rate against the mock upstream (a fast server) on
# core 0. Needs root (cgroup v1 cpu controller or cgroup v2). Usage:
# bash bench/mistakes/generator-bottleneck.sh [RATE=5000] [SECS=3] [QUOTA_US=5000 of 100000]
source "$(dirname "$0")/lib.sh"
RATE=${RATE:-5000}; SECS=${SECS:-3}; QUOTA_US=${QUOTA_US:-5000}
start_upstream
if [ -d /sys/fs/cgroup/cpu ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    CG=/sys/fs/cgroup/cpu/loadlab-mistake3-$$
    mkdir "$CG"; echo 100000 > "$CG/cpu.cfs_period_us"; echo "$QUOTA_US" > "$CG/cpu.cfs_quota_us"
else
    CG=/sys/fs/cgroup/loadlab-mistake3-$$
    mkdir "$CG"; echo "$QUOTA_US 100000" > "$CG/cpu.max"
fi
trap 'cleanup; rmdir "$CG" 2>/dev/null || true' EXIT
# the starved generator: its shell joins the cgroup, then becomes loadlab (-t 1, core 1)
OUT=$OUT LOADLAB=$LOADLAB CG=$CG sh -c 'echo $$ > "$CG/cgroup.procs" 2>/dev/null || echo $$ > "$CG/tasks"; exec taskset -c 1 "$LOADLAB" run --json "$OUT/starved.json" -t 1 --rate '"$RATE"' -d '"$SECS"'s '"$UP"'/ > "$OUT/starved.txt" 2>&1' || true
RUN_ON=1 ll roomy -t 1 --rate "$RATE" -d "${SECS}s" "$UP/"
echo "== mistake 3, the generator as the bottleneck: open loop $RATE/s for ${SECS}s, mock upstream on core 0 (out: $OUT)"
header "generator"
row "wrong: $((QUOTA_US / 1000)) ms CPU per 100 ms" starved
row "right: core 1 to itself" roomy
for r in starved roomy; do echo "loadlab, run $r:"; said "$r" '^(Requests|Send lag|Generator|  ! |WARN|Verdict)|generator|send lag'; done
