#!/usr/bin/env bash
# Issue 41's bench: the posts' topologies with a fleet of generators. Hosts are network
# namespaces made here, joined by a bridge in a namespace of its own, with link-local
# addresses that exist only inside them (169.254.141.0/24):
#
#   srv   169.254.141.1   the server: the fixture with a fixed service time (one server,
#                         SERVICE_US a request: exactly 1e6/SERVICE_US requests/s)
#   coord 169.254.141.2   loadlab, the coordinator
#   g1..  169.254.141.11+ `loadlab agent --generator`, each behind a tbf-shaped link
#
# Post 001: clients on 2, 6 and 10 MBps links against one server (each request carries
# BODY bytes so the link matters); the table gives, per link speed, what one client alone
# sustained and what the capacity search concluded, then the three together.
# Post 002: an open-loop capacity search from four generators against the server, beside
# the one-generator answer that was wrong (the generator's link, not the server, was the
# limit).
#
#   bash bench/fleet.sh
#   SERVICE_US=400 PROBE_SECS=3 bash bench/fleet.sh
#
# Needs root and iproute2 (tc tbf); everything it makes is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SERVICE_US=${SERVICE_US:-500}
BODY=${BODY:-2000}
PROBE_SECS=${PROBE_SECS:-2}
OUT=$PWD/bench/out/fleet-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
[ "$(id -u)" -eq 0 ] || { echo "fleet.sh: needs root (network namespaces)" >&2; exit 2; }
if [ -z "${LOADLAB:-}" ]; then
    cargo build -q --locked -p loadlab-cli --bins
    LOADLAB=$PWD/target/debug/loadlab
fi
FIXTURE=${FIXTURE:-$(dirname "$LOADLAB")/loadlab-fixture}

tag=flt$$
br=${tag}br
# Post 001's three links, then post 002's four generators on 25 Mbit/s each.
hosts=(srv coord g1 g2 g3 g4 g5 g6 g7)
rates=(- - 16mbit 48mbit 80mbit 25mbit 25mbit 25mbit 25mbit)
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
addr() { case $1 in srv) echo 169.254.141.1;; coord) echo 169.254.141.2;; g*) echo "169.254.141.$((10 + ${1#g}))";; esac; }
i=0
for h in "${hosts[@]}"; do
    ns=$tag$h
    ip netns add "$ns"
    ip -n "$ns" link add name eth0 type veth peer name "p$i" netns "$br"
    ip -n "$br" link set "p$i" master br0 up
    ip -n "$ns" addr add "$(addr "$h")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ "${rates[$i]}" != - ]; then
        tc -n "$ns" qdisc add dev eth0 root tbf rate "${rates[$i]}" burst 32kb latency 100ms
    fi
    i=$((i + 1))
done
run_in() { local ns=$tag$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

# Started with nsenter itself in the background (not through a function, whose subshell
# would be the PID recorded, leaving the process it started behind when killed).
nsenter --net="/run/netns/${tag}srv" -- env HOST=169.254.141.1 PORT=8081 \
    "$FIXTURE" --service-us "$SERVICE_US" >/dev/null 2>&1 &
pids+=($!)
for g in g1 g2 g3 g4 g5 g6 g7; do
    nsenter --net="/run/netns/$tag$g" -- "$LOADLAB" agent --generator \
        --listen "$(addr "$g"):7070" --state-dir "$OUT/state-$g" >"$OUT/agent-$g.out" 2>&1 &
    pids+=($!)
done
for g in g1 g2 g3 g4 g5 g6 g7; do
    for _ in $(seq 100); do grep -q "generator flags" "$OUT/agent-$g.out" 2>/dev/null && break; sleep 0.1; done
done
entry() {
    local g=$1 fp
    fp=$(grep -o 'sha256:[A-F0-9:]*' "$OUT/agent-$g.out" | head -1)
    printf '[[generator]]\nname = "%s"\nurl = "https://%s:7070"\ntoken_file = "%s"\nfingerprint = "%s"\n\n' \
        "$g" "$(addr "$g")" "$OUT/state-$g/token" "$fp"
}
fleet() { local f=$OUT/fleet-$(echo "$@" | tr ' ' '-').toml; : >"$f"; for g in "$@"; do entry "$g" >>"$f"; done; echo "$f"; }
head -c "$BODY" /dev/zero | tr '\0' x >"$OUT/body"
capacity=$(awk "BEGIN { print 1e6 / $SERVICE_US }")

search() { # NAME FLEET-FILE: one capacity search, its verdict
    local name=$1 file=$2
    run_in coord "$LOADLAB" capacity --no-save -q --generators "$file" --slo 'p99<100ms' \
        -d "${PROBE_SECS}s" --warmup 500ms --cooldown 300ms --tolerance 0.04 --start 300 \
        --repeats 1 -m POST --body-file "$OUT/body" --json "$OUT/$name.json" \
        http://169.254.141.1:8081/ >"$OUT/$name.out" 2>&1 || true
    python3 - "$OUT/$name.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["finding"]
found = f.get("estimate") if f["kind"] == "capacity" else None
v = d["verdict"]
# The reason a generator held the load back is the part a reader needs.
why = v.split("what held the load back: ", 1)
v = why[1] if len(why) == 2 else v
print(f'{f["kind"]}\t{found if found is not None else "-"}\t{v[:170]}')
EOF
}

echo "Server: one server, ${SERVICE_US} µs a request: ${capacity}/s. Each request carries $BODY bytes."
echo
echo "Post 001: one client per link speed, then the three together"
printf '| clients | links | finding | capacity/s | verdict |\n|---|---|---|---|---|\n'
for pair in "g1 2MBps" "g2 6MBps" "g3 10MBps"; do
    set -- $pair
    IFS=$'\t' read -r kind found verdict < <(search "post001-$1" "$(fleet "$1")")
    echo "| $1 | $2 | $kind | $found | $verdict |"
done
IFS=$'\t' read -r kind found verdict < <(search post001-all "$(fleet g1 g2 g3)")
echo "| g1 g2 g3 | 2+6+10 MBps | $kind | $found | $verdict |"
echo
echo "Post 002: four generators on 25 Mbit/s links, against one"
printf '| generators | finding | capacity/s | verdict |\n|---|---|---|---|\n'
IFS=$'\t' read -r kind found verdict < <(search post002-one "$(fleet g4)")
echo "| g4 | $kind | $found | $verdict |"
IFS=$'\t' read -r kind found verdict < <(search post002-four "$(fleet g4 g5 g6 g7)")
echo "| g4 g5 g6 g7 | $kind | $found | $verdict |"
echo
echo "outputs: $OUT"
