# Shared by bench/path-limits.sh and bench/mistakes/capped-clients.sh: sourced, not run.
# Test hosts as network namespaces joined by a bridge in a namespace of its own, addresses in
# 198.18.0.0/24 (RFC 2544's benchmarking range): the server 198.18.0.1, the coordinator
# 198.18.0.10, generators 198.18.0.11 on. A provider's cap goes on the bridge's side of a
# host's veth, invisible from the host. Everything made is removed on exit (the namespaces,
# and with them the veths and qdiscs); only the processes started here are stopped, by PID.
# Needs root, iproute2 with tbf, nsenter. Commands enter a namespace with `nsenter --net`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOADLAB=${LOADLAB:-$ROOT/target/release/loadlab}
FIXTURE=${FIXTURE:-$(dirname "$LOADLAB")/loadlab-fixture}
for b in "$LOADLAB" "$FIXTURE"; do
    [ -x "$b" ] || { echo "no $b: cargo build --release -p loadlab-cli, or set LOADLAB" >&2; exit 2; }
done
TAG=llb$(( $$ % 100000 ))
NSES=(); PIDS=()
netns_cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for (( i=${#NSES[@]}-1; i>=0; i-- )); do ip netns del "${NSES[$i]}" 2>/dev/null || true; done
}
trap netns_cleanup EXIT INT TERM

# in_ns NS CMD...: in the foreground only. A program left running is started with nsenter
# itself (`nsenter --net=/run/netns/NS -- CMD &`), so that $! is its own PID: a backgrounded
# shell function is a subshell, and killing it would leave the program running.
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

# lab_up N: the bridge, the server ($TAG-sv), the coordinator ($TAG-co) and N generators
# ($TAG-g1...), each with eth0 on the bridge; the bridge's port toward host X is p-X.
lab_up() {
    local n=$1 br=$TAG-br
    ip netns add "$br"; NSES+=("$br")
    ip -n "$br" link add br0 type bridge; ip -n "$br" link set br0 up
    _host sv 198.18.0.1; _host co 198.18.0.10
    for i in $(seq 1 "$n"); do _host "g$i" "198.18.0.$((10 + i))"; done
}
_host() {
    local name=$1 addr=$2 ns=$TAG-$1
    ip netns add "$ns"; NSES+=("$ns")
    ip -n "$ns" link add eth0 type veth peer name "p-$name" netns "$TAG-br"
    ip -n "$TAG-br" link set "p-$name" master br0 up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up; ip -n "$ns" link set lo up
}

# cap HOST RATE: what reaches HOST (sv, co, g1...) through the bridge, capped by a tbf with a
# provider's buffer (100 ms); `cap sv RATE` caps every request's way to the server.
cap() { tc -n "$TAG-br" qdisc replace dev "p-$1" root tbf rate "$2" burst 32kb latency 100ms; }
uncap() { tc -n "$TAG-br" qdisc del dev "p-$1" root 2>/dev/null || true; }

# agent NAME HOST ADDR:PORT ARGS...: a loadlab agent in HOST's namespace; waits for its
# fingerprint and leaves, in $OUT/NAME.agent, the [[generator]] table for a fleet file and in
# $OUT/NAME.flags the flags that name it as the server's agent.
agent() {
    local name=$1 host=$2 listen=$3; shift 3
    local state=$OUT/state-$name
    nsenter --net="/run/netns/$TAG-$host" -- "$LOADLAB" agent "$@" --listen "$listen" \
        --state-dir "$state" > "$OUT/$name.log" 2>&1 &
    PIDS+=($!)
    local fp=""
    for _ in $(seq 100); do
        fp=$(grep -oE 'sha256:[0-9A-Fa-f:]+' "$OUT/$name.log" | head -1 || true)
        [ -n "$fp" ] && break; sleep 0.1
    done
    [ -n "$fp" ] || { echo "agent $name did not start: $OUT/$name.log" >&2; exit 2; }
    printf '[[generator]]\nname = "%s"\nurl = "https://%s"\ntoken_file = "%s"\nfingerprint = "%s"\n\n' \
        "$name" "$listen" "$state/token" "$fp" > "$OUT/$name.agent"
    echo "--agent https://$listen --agent-token-file $state/token --agent-fingerprint $fp" > "$OUT/$name.flags"
}

# fleet FILE NAMES...: a fleet file of the named generators' agents.
fleet() { local f=$1; shift; : > "$f"; for g in "$@"; do cat "$OUT/$g.agent" >> "$f"; done; }
