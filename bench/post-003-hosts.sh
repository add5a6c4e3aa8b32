#!/usr/bin/env bash
# Issue 28's bar: post 003 on three hosts. The post measured a one-core server host called by
# Gatling from a third host, with its upstream on a second. Here the hosts are network
# namespaces made by this script, joined by a bridge in a namespace of its own, with
# link-local addresses that exist only inside them (169.254.103.0/24):
#
#   srv  169.254.103.1  `loadlab agent`, which launches the target pinned to core TARGET_CPU
#   ups  169.254.103.2  the mock upstream (`loadlab upstream`), on core LOAD_CPU
#   gen  169.254.103.3  loadlab, on core LOAD_CPU
#
# and each cell is found by
#
#   loadlab capacity --agent https://169.254.103.1:7070 ... --target T --pin 0 \
#       --until server-cpu=0.85 [--tls] [--no-keepalive] --upstream http://169.254.103.2:PORT/ \
#       /upstream?calls=8
#
# with the idle share of the server's core read through the agent. The same cells with
# everything on one host are bench/post-003.sh. The clock offset measured for each cell is
# printed beside it. Needs root and iproute2; everything it makes is removed at the end.
#
#   bash bench/post-003-hosts.sh
#   TARGETS=rust-axum CELLS=http-persistent PROBE_SECS=3 REPEATS=1 bash bench/post-003-hosts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-"java-webflux rust-axum"}
CELLS=${CELLS:-"http-new http-persistent https-new https-persistent"}
PROBE_SECS=${PROBE_SECS:-5}
REPEATS=${REPEATS:-2}
BUDGET=${BUDGET:-6m}
TARGET_CPU=${TARGET_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=$PWD/bench/out/post-003-hosts-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true
[ "$(id -u)" -eq 0 ] || { echo "post-003-hosts: needs root (network namespaces)" >&2; exit 2; }

if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$PWD/target/release/loadlab
fi
for t in $TARGETS; do
    "$LOADLAB" lab build "$t" >> "$OUT/build.log" 2>&1 || echo "$t did not build: see $OUT/build.log"
done

tag=p3h$$
br=${tag}br
hosts=(srv ups gen)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for h in "${hosts[@]}"; do ip netns del "$tag$h" 2>/dev/null || true; done
    ip netns del "$br" 2>/dev/null || true
}
trap cleanup EXIT

ip netns add "$br"
ip -n "$br" link add br0 type bridge
ip -n "$br" link set br0 up
i=0
for h in "${hosts[@]}"; do
    i=$((i + 1))
    ns=$tag$h
    ip netns add "$ns"
    # Both ends are made inside namespaces: this machine's own namespace is never touched.
    ip -n "$ns" link add eth0 type veth peer name "p$i" netns "$br"
    ip -n "$br" link set "p$i" master br0 up
    ip -n "$ns" addr add "169.254.103.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
done
SRV=169.254.103.1
UPS=169.254.103.2
# nsenter --net, not `ip netns exec`, which also remounts /sys without the cgroup mount the
# agent's --pin needs (a real host keeps its mounts).
inns() { local ns=$tag$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }
# The same in the background, its PID kept: nsenter started directly (not through a function,
# whose background subshell's PID is not the server's) execs the program in place, so the
# PID in $pids is the server's own and the cleanup stops it.
spawn() { # host log cmd...
    local ns=$tag$1 log=$2; shift 2
    nsenter --net="/run/netns/$ns" -- "$@" > "$log" 2>&1 &
    pids+=($!)
}

spawn srv "$OUT/agent.log" "$LOADLAB" agent --listen "$SRV:7070" --state-dir "$OUT/agent" \
    --targets "$PWD/targets"
for _ in $(seq 100); do grep -q 'sha256:' "$OUT/agent.log" && break; sleep 0.1; done
FP=$(grep -o 'sha256:[0-9A-Fa-f:]*' "$OUT/agent.log" | head -1)
AGENT=(--agent "https://$SRV:7070" --agent-token-file "$OUT/agent/token" --agent-fingerprint "$FP")

spawn ups "$OUT/upstream.log" taskset -c "$LOAD_CPU" "$LOADLAB" upstream --host "$UPS" --port 0 --threads 1
for _ in $(seq 100); do grep -q '^listening on ' "$OUT/upstream.log" && break; sleep 0.1; done
UPSTREAM="http://$(grep -m1 '^listening on ' "$OUT/upstream.log" | awk '{print $3}')/"

# shellcheck source=bench/post-003-lib.sh
. "$(dirname "$0")/post-003-lib.sh"

for t in $TARGETS; do
    for cell in $CELLS; do
        echo "== $t $cell (three hosts)"
        # shellcheck disable=SC2046 # the flags are words
        inns gen taskset -c "$LOAD_CPU" "$LOADLAB" capacity "${AGENT[@]}" --target "$t" --pin "$TARGET_CPU" \
            --upstream "$UPSTREAM" $(cell_flags "$cell") --until server-cpu=0.85 --start "${START:-50}" \
            -d "${PROBE_SECS}s" --warmup 1s --repeats "$REPEATS" --budget "$BUDGET" --no-save \
            --json "$OUT/$t-$cell.json" "/upstream?calls=8" > "$OUT/$t-$cell.log" 2>&1 || true
        tail -3 "$OUT/$t-$cell.log"
    done
done

post003_table "$OUT" "$TARGETS" "$CELLS" clock | tee "$OUT/table.md"
echo "documents in $OUT"
