#!/usr/bin/env bash
# Issue 19's bar: post 003's four cells (HTTP and HTTPS, with a new connection per request and
# with persistent connections) for java-webflux and rust-axum, each target pinned to one core
# (core 0; loadlab and the mock upstream on core 1) serving /upstream?calls=8 against the mock
# upstream, at the rate that keeps its core 85-90% busy: found by
#
#   loadlab capacity --target T --pin 0 --until server-cpu=0.85 [--tls] [--no-keepalive] \
#       --upstream http://127.0.0.1:PORT/ /upstream?calls=8
#
# (open-loop probes, latency from when each request was due; a probe fails once the server's
# CPU reaches 85% of its core, or errors pass 1%, or a queue grows). Each cell reports the
# capacity with its range over the search's rounds, and the probe at the boundary (the
# passing probe that kept the core busiest): requests/s achieved, p99, and the core's use.
#
# HTTPS uses a throwaway CA and certificate made for the run (`--tls`: TLS_CERT, TLS_KEY);
# with a new connection per request loadlab resumes TLS sessions (TLS_RESUME=off for a full
# handshake every time). The upstream calls stay plain HTTP unless UPSTREAM_TLS=1 (then the
# mock upstream serves HTTPS and the targets get UPSTREAM_CA). A target that is not built, or
# does not serve HTTPS, gets its cell marked instead of a number.
#
#   bash bench/post-003.sh                                  # both targets, four cells each
#   TARGETS=rust-axum PROBE_SECS=3 REPEATS=1 bash bench/post-003.sh
#   TARGETS=rust-axum CELLS="https-new https-persistent" bash bench/post-003.sh
#   (START, the first rate probed, 50/s; BUDGET per search, 6m; LOADLAB, a built loadlab)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-"java-webflux rust-axum"}
CELLS=${CELLS:-"http-new http-persistent https-new https-persistent"}
PROBE_SECS=${PROBE_SECS:-5}
REPEATS=${REPEATS:-2}
BUDGET=${BUDGET:-6m}
TARGET_CPU=${TARGET_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=$PWD/bench/out/post-003-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true

# LOADLAB=path/to/loadlab runs that binary instead of building this checkout's.
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$PWD/target/release/loadlab
fi
for t in $TARGETS; do
    "$LOADLAB" lab build "$t" >> "$OUT/build.log" 2>&1 || echo "$t did not build: see $OUT/build.log"
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

upstream_flags=()
if [ "${UPSTREAM_TLS:-0}" = 1 ]; then
    taskset -c "$LOAD_CPU" "$LOADLAB" upstream --port 0 --threads 1 --tls --tls-dir "$OUT/upstream-tls" > "$OUT/upstream.log" 2>&1 &
    scheme=https
else
    taskset -c "$LOAD_CPU" "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.log" 2>&1 &
    scheme=http
fi
pids+=($!)
for _ in $(seq 100); do grep -q '^listening on ' "$OUT/upstream.log" && break; sleep 0.1; done
UPSTREAM="$scheme://$(grep -m1 '^listening on ' "$OUT/upstream.log" | awk '{print $3}')/"
upstream_flags=(--upstream "$UPSTREAM")
[ "$scheme" = https ] && upstream_flags+=(--upstream-ca "$OUT/upstream-tls/ca.pem")

# shellcheck source=bench/post-003-lib.sh
. "$(dirname "$0")/post-003-lib.sh"

for t in $TARGETS; do
    for cell in $CELLS; do
        echo "== $t $cell"
        # shellcheck disable=SC2046 # the flags are words
        taskset -c "$LOAD_CPU" "$LOADLAB" capacity --target "$t" --pin "$TARGET_CPU" "${upstream_flags[@]}" \
            $(cell_flags "$cell") --until server-cpu=0.85 --start "${START:-50}" \
            -d "${PROBE_SECS}s" --warmup 1s --repeats "$REPEATS" --budget "$BUDGET" --no-save -q \
            --json "$OUT/$t-$cell.json" "/upstream?calls=8" > "$OUT/$t-$cell.log" 2>&1 || true
        tail -3 "$OUT/$t-$cell.log"
    done
done

post003_table "$OUT" "$TARGETS" "$CELLS" | tee "$OUT/table.md"
echo "documents in $OUT"
