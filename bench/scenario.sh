#!/usr/bin/env bash
# Issue 20's bar: in one run, against the same server (`loadlab upstream`, hyper, one thread),
# the requests/s of a 5-step scenario without captures against a single-URL closed loop
# (bar: >= 0.9x), and of a 5-step scenario with a capture and a variable in every step
# (bar: >= 0.7x). The three loads run in turn, ROUNDS times, interleaved, so drift on a
# noisy machine lands on all three; the ratio is of the medians. The server is pinned to core
# SERVER_CPU (0) and loadlab to LOAD_CPU (1): unpinned, the two wander onto one core now and
# then, and that, not the scenario, decides a run (single-URL runs of 94,000-141,000/s).
#
#   bash bench/scenario.sh            # SECS=5 ROUNDS=3 CONNS=32; LOADLAB=path skips the build
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
OUT=bench/out/scenario
mkdir -p "$OUT"
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release --locked -q -p loadlab-cli
    LOADLAB=target/release/loadlab
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
taskset -c "$SERVER_CPU" "$LOADLAB" upstream --port "$PORT" --threads 1 >"$OUT/upstream.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
    sleep 0.1
done
BASE="http://127.0.0.1:$PORT"

# Five steps, constant: every request encoded once, at load.
{
    echo "name = \"five-steps\""
    echo "base_url = \"$BASE\""
    for k in 1 2 3 4 5; do
        printf '[[steps]]\nname = "s%s"\nurl = "/step/%s"\n' "$k" "$k"
    done
} >"$OUT/constant.toml"
# Five steps, each sending the value the previous one captured (a header) and capturing its own.
{
    echo "name = \"five-captures\""
    echo "base_url = \"$BASE\""
    printf '[variables]\nV5 = "0"\n'
    prev=5
    for k in 1 2 3 4 5; do
        printf '[[steps]]\nname = "s%s"\nurl = "/step/%s?v={{V%s}}"\n' "$k" "$k" "$prev"
        printf '[[steps.captures]]\nvar = "V%s"\nheader = "content-length"\n' "$k"
        prev=$k
    done
} >"$OUT/captures.toml"

run() {
    taskset -c "$LOAD_CPU" "$LOADLAB" run -t 1 -c "$CONNS" -d "${SECS}s" --warmup 1s --no-pm-qos -q --json "$1" "${@:2}"
}
for round in $(seq "$ROUNDS"); do
    run "$OUT/url-$round.json" "$BASE/step/1"
    run "$OUT/constant-$round.json" --scenario "$OUT/constant.toml"
    run "$OUT/captures-$round.json" --scenario "$OUT/captures.toml"
done

python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rps(kind):
    runs = [json.load(open(f"{out}/{kind}-{r}.json")) for r in range(1, rounds + 1)]
    for r in runs:
        m = r["measured"]["requests"]
        assert m["failed"] == 0, f"{kind}: {m['failed']} failed"
    return [r["measured"]["requests"]["per_second"] for r in runs], [
        r["generator"]["cpu_s_per_100k_requests"] for r in runs]
(url, url_cpu), (const, const_cpu), (caps, caps_cpu) = rps("url"), rps("constant"), rps("captures")
mu, mc, mk = (statistics.median(x) for x in (url, const, caps))
cu, cc, ck = (statistics.median(x) for x in (url_cpu, const_cpu, caps_cpu))
print(f"single URL            {mu:>10,.0f} requests/s  (runs: {', '.join(f'{x:,.0f}' for x in url)})")
print(f"5 steps, no captures  {mc:>10,.0f} requests/s  (runs: {', '.join(f'{x:,.0f}' for x in const)})")
print(f"5 steps, 5 captures   {mk:>10,.0f} requests/s  (runs: {', '.join(f'{x:,.0f}' for x in caps)})")
ok1, ok2 = mc / mu >= 0.9, mk / mu >= 0.7
print(f"ratio without captures: {mc / mu:.3f}x (bar 0.9x: {'met' if ok1 else 'NOT met'})")
print(f"ratio with captures:    {mk / mu:.3f}x (bar 0.7x: {'met' if ok2 else 'NOT met'})")
print(f"loadlab CPU per 100,000 requests (median): single URL {cu:.3f} s, "
      f"no captures {cc:.3f} s ({cu / cc:.3f}x), captures {ck:.3f} s ({cu / ck:.3f}x)")
PY
