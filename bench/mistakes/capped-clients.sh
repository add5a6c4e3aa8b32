#!/usr/bin/env bash
# Mistake 6 (post 001): clients behind capped links. The post measured web services from
# Raspberry Pis whose links were capped at 2, 6 and 10 MBps; what a client behind a cap sees
# levels off at what the link carries, whatever the server could serve. Here the server is a
# serial one of 240 requests/s answering 12 KB, on a namespaced host; the wrong number is a
# capacity search from one generator whose downlink a provider caps at 2 MBps (16 Mbit/s, a tbf
# on the bridge's side: its own interface shows nothing), the right one the same search from an
# uncapped generator. Both with the server's agent, so the path is checked before the search.
# Needs root (network namespaces, tc). Usage:
# bash bench/mistakes/capped-clients.sh [CAP=16mbit]
source "$(dirname "$0")/../netns-lib.sh"
OUT=${OUT:-$ROOT/bench/out/mistakes-capped-clients-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
CAP=${CAP:-16mbit}
lab_up 2
nsenter --net="/run/netns/$TAG-sv" -- env HOST=198.18.0.1 PORT=8081 "$FIXTURE" --service-us 4166 > "$OUT/fixture.log" 2>&1 &
PIDS+=($!)
agent server sv 198.18.0.1:7071 --port 8081
agent g1 g1 198.18.0.11:7070 --generator
agent g2 g2 198.18.0.12:7070 --generator
fleet "$OUT/capped.toml" g1
fleet "$OUT/roomy.toml" g2
cap g1 "$CAP"
search() {
    # shellcheck disable=SC2046
    timeout 120 nsenter --net="/run/netns/$TAG-co" -- "$LOADLAB" capacity --no-save \
        --slo 'p99<200ms' -d 2s --warmup 500ms --cooldown 500ms --tolerance 0.05 --start 120 \
        --repeats 1 --generators "$OUT/$1.toml" $(cat "$OUT/server.flags") --json "$OUT/$1.json" \
        "http://198.18.0.1:8081/bytes?n=12288" > "$OUT/$1.txt" 2>&1 || true
}
search capped
search roomy
echo "== mistake 6, clients behind capped links: a capacity search of a 240/s server answering 12 KB (out: $OUT)"
for r in capped roomy; do
    python3 - "$r" "$OUT/$r.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
label = {"capped": "wrong: the client behind a 2 MBps cap", "roomy": "right: an uncapped client"}[name]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{label:<40} no result ({e})"); sys.exit()
best = max((p["measure"]["achieved_per_s"] for p in d["probes"] if p["judgment"]["pass"]), default=0)
print(f"{label:<40} highest passing probe {best:6.1f}/s  finding: {d['finding']['kind'] if d.get('finding') else '-'}")
PY
done
for r in capped roomy; do
    echo "loadlab, $r:"
    grep -E "path to generator|paths carry at most|warning: the path|capacity|no capacity" "$OUT/$r.txt" | grep -v '^#' | sed 's/^/    | /'
done
