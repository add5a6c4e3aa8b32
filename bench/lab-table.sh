#!/usr/bin/env bash
# The README's lab table, measured by loadlab itself: each target pinned to core 0 with one
# worker, loadlab (and the mock upstream) on core 1; 50 connections, 10 s per column after a
# 1 s warm-up, on /plaintext, /json, and /upstream?calls=8 with a pooled client and with a
# client per call; plus the target's idle memory (RSS of its process tree just after start).
# Before the first column each target also gets the warm-up its manifest recommends (30 s for
# the JVM targets) on every path measured, unmeasured; a client-per-call path gets 500 requests.
#
# Two HTTPS columns (issue 19): the target started again with `lab serve --tls` (a throwaway
# CA and certificate; TLS_CERT/TLS_KEY), /plaintext over HTTPS with keep-alive, and with a new
# connection (so a TLS handshake) per request (`--no-keepalive`; loadlab resumes sessions, as
# a browser would): requests/s (p99), and for the second the handshakes per second and the
# share of them that resumed a session. A target that does not serve HTTPS (it did not
# become healthy over TLS) gets "-" in both.
#
# Two gRPC columns (issue 19, post 002's third case): /upstream-grpc?calls=8 with one channel
# for the process and with a channel per call, for targets with the `upstream-grpc`
# capability ("-" for the rest): requests/s (p99), and the gRPC connections the mock upstream
# accepted for the calls it answered. The one-channel cell also gives the connections the
# target opened since it started: its one channel is made at start-up or on the first call,
# which the manifest's warm-up (on every path) or the column's own 1 s warm-up makes, so the
# column itself normally opens none ("0 new ... 1 since start": the channel, reused).
#
# A second table, reliability: after those columns, the same target (still one worker on core 0,
# its default listen backlog) gets a short closed-loop run on /plaintext at each of
# RELIABILITY_CONNECTIONS (1,000 and 2,500, post 001's highest settings), RELIABILITY_SECS
# each with no warm-up, so opening the connections is part of it: requests completed of those
# issued, and the failures by class as loadlab's result names them (connect_timeout,
# connection_reset, ...). A request unanswered after RELIABILITY_TIMEOUT (5 s) fails as
# request_timeout: a connection the server never serves (a thread-per-connection server with
# all its threads held by kept-alive connections) then shows as failures, not as the one
# request every closed-loop connection has in flight when the run ends.
#
#   bash bench/lab-table.sh                                # every built target
#   TARGETS="rust-axum go-nethttp" SECS=3 bash bench/lab-table.sh
#   TARGETS=python-tornado SECS=2 RELIABILITY_SECS=2 bash bench/lab-table.sh   # a smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
RELIABILITY_SECS=${RELIABILITY_SECS:-10}
RELIABILITY_CONNECTIONS=${RELIABILITY_CONNECTIONS:-1000 2500}
RELIABILITY_TIMEOUT=${RELIABILITY_TIMEOUT:-5s}
TARGET_CPU=${TARGET_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

# Every connection is a descriptor in loadlab and another in the target, which inherits this
# shell's limit: raise the soft open-files limit (and the hard one where allowed, as root) to
# the most connections plus room for everything else. loadlab refuses a run its hard limit
# cannot hold, with the fix.
nofile_needed=$(( $(printf '%s\n' $RELIABILITY_CONNECTIONS 50 | sort -n | tail -1) + 1024 ))
if [ "$(ulimit -Sn)" != unlimited ] && [ "$(ulimit -Sn)" -lt "$nofile_needed" ]; then
    if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$nofile_needed" ]; then
        ulimit -Hn "$nofile_needed" 2>/dev/null ||
            echo "open-files hard limit $(ulimit -Hn) is below the $nofile_needed the reliability runs need: run as root or raise it (ulimit -Hn, LimitNOFILE)" >&2
    fi
    ulimit -Sn "$(ulimit -Hn)"
fi

# LOADLAB=path/to/loadlab runs that binary instead of building this checkout's.
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$PWD/target/release/loadlab
fi
OUT=$PWD/bench/out/lab-table-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
"$LOADLAB" lab build all > "$OUT/build.log" 2>&1 || echo "some targets did not build: see $OUT/build.log"
"$LOADLAB" lab list --json > "$OUT/targets.json"
# shellcheck source=bench/lab-lib.sh
. "$(dirname "$0")/lab-lib.sh"
TARGETS=${TARGETS:-$(python3 -c "
import json,sys; print(' '.join(t['name'] for t in json.load(open(sys.argv[1])) if t['state'] == 'built'))" "$OUT/targets.json")}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# RSS in MiB of a process and all its descendants.
tree_rss() {
    local all=("$1") i=0
    while [ $i -lt ${#all[@]} ]; do
        for c in $(cat /proc/"${all[$i]}"/task/*/children 2>/dev/null); do all+=("$c"); done
        i=$((i + 1))
    done
    local kb=0
    for p in "${all[@]}"; do
        kb=$((kb + $(awk '/^VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)))
    done
    echo $((kb / 1024))
}

taskset -c "$LOAD_CPU" "$LOADLAB" upstream --port 0 --threads 1 > "$OUT/upstream.log" 2>&1 &
pids+=($!)
UPSTREAM="http://$(first_match "$OUT/upstream.log" '^listening on ' | awk '{print $3}')"

# loadlab exits non-zero when nothing succeeded (python-starlette's per-call column, for one) and
# writes its result all the same: that is a cell of the table, not a reason to stop the script.
load() { # url name [run flags...] -> "rps p99_ms bad"
    local url=$1 name=$2
    shift 2
    rm -f "$OUT/$name.json"
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 -d "${SECS}s" --warmup 1s "$@" --json "$OUT/$name.json" "$url" \
        > "$OUT/$name.log" 2>&1 || true
    if [ ! -s "$OUT/$name.json" ]; then echo "0 - 1"; return; fi
    python3 -c "
import json,sys; r=json.load(open(sys.argv[1])); m=r['measured']
ok=sum(v for k,v in m['status_codes'].items() if k.startswith('2'))
print(round(m['requests']['per_second']), round(m['latency_us']['p99']/1000, 2) if m['latency_us'] else '-', m['requests']['failed'] + m['requests']['completed'] - ok + r.get('in_flight_at_end', 0) * (m['requests']['completed'] == 0))
" "$OUT/$name.json"
}
# Handshakes per second and the resumed share of a run over TLS -> "per_s resumed_percent".
handshakes() { # name
    if [ ! -s "$OUT/$1.json" ]; then echo "0 0"; return; fi
    python3 -c "
import json,sys; m=json.load(open(sys.argv[1]))['measured']
n=m['tls_full']+m['tls_resumed']
print(round(n/m['duration_s']), round(100*m['tls_resumed']/n) if n else 0)
" "$OUT/$1.json"
}
# The HTTPS columns of target $1 -> two table cells.
https_columns() { # target
    local log="$OUT/$1-tls.log" pid url cacert
    "$LOADLAB" lab serve "$1" --tls --pin "$TARGET_CPU" --workers 1 --ready-timeout "${TLS_READY_TIMEOUT:-60s}" > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 900); do
        grep -q '^cacert ' "$log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q '^cacert ' "$log" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
        echo "- (no HTTPS: $(grep -m1 -iE 'error|did not' "$log" | cut -c1-80)) | - |"
        return
    fi
    url=$(grep -m1 '^https://' "$log")
    cacert=$(grep -m1 '^cacert ' "$log" | cut -d' ' -f2-)
    local warm
    warm=$(warmup_of "$1")
    if [ "$warm" -gt 1 ]; then
        taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 -d "${warm}s" --cacert "$cacert" "$url/plaintext" >/dev/null
    fi
    local k_rps k_p99 k_bad n_rps n_p99 n_bad hs resumed
    read -r k_rps k_p99 k_bad < <(load "$url/plaintext" "$1-https" --cacert "$cacert")
    read -r n_rps n_p99 n_bad < <(load "$url/plaintext" "$1-https-new" --cacert "$cacert" --no-keepalive)
    read -r hs resumed < <(handshakes "$1-https-new")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    local extra=""
    [ $((k_bad + n_bad)) -gt 0 ] && extra=" ($((k_bad + n_bad)) non-2xx or failed)"
    echo "$(fmt "$k_rps") ($k_p99 ms) | $(fmt "$n_rps") ($n_p99 ms), $(fmt "$hs") handshakes/s, ${resumed}% resumed$extra |"
}
# A closed-loop run of RELIABILITY_SECS at $3 connections -> one row of the reliability table.
# loadlab exits 2 when no request succeeded and 3 when the server died, and writes its result
# either way: those are rows too.
reliability() { # url name connections
    local json="$OUT/$2-reliability-$3.json" log="$OUT/$2-reliability-$3.log" code=0
    rm -f "$json"
    taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c"$3" -d "${RELIABILITY_SECS}s" --timeout "$RELIABILITY_TIMEOUT" --json "$json" "$1" \
        > "$log" 2>&1 || code=$?
    if [ ! -s "$json" ]; then
        echo "| $2 | $(fmt "$3") | loadlab could not run (exit $code): $(grep -m1 -i error "$log" || tail -1 "$log") | | |"
        return
    fi
    python3 - "$json" "$2" "$3" "$code" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["measured"]
q = m["requests"]
n = lambda v: f"{v:,}"
ok = sum(v for k, v in m["status_codes"].items() if k.startswith("2"))
share = f" ({100 * q['completed'] / q['issued']:.1f}%)" if q["issued"] else ""
classes = sorted(m["errors"].items(), key=lambda kv: -kv[1])
failed = f"{n(q['failed'])}: " + (", ".join(f"{k} {n(v)}" for k, v in classes) or "none")
if r["in_flight_at_end"]:
    failed += f"; {n(r['in_flight_at_end'])} still in flight at the end"
if sys.argv[4] == "3":
    failed += "; the server died during the run"
print(f"| {sys.argv[2]} | {n(int(sys.argv[3]))} | {n(q['completed'])} of {n(q['issued'])}{share} "
      f"| {failed} | {n(q['completed'] - ok)} |")
PY
}
stats() { curl -s "$UPSTREAM/__stats" | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['requests'], s['connections'])"; }
grpc_stats() { curl -s "$UPSTREAM/__stats" | python3 -c "import json,sys; s=json.load(sys.stdin); print(s['grpc_requests'], s['grpc_connections'])"; }
# The gRPC columns of target $1, served at $2 -> two table cells.
grpc_columns() { # target url
    if ! has_grpc "$1"; then echo "- | - |"; return; fi
    local g0 gc0 g1 gc1 g2 gc2 p_rps p_p99 p_bad c_rps c_p99 c_bad extra="" since
    read -r g0 gc0 < <(grpc_stats)
    read -r p_rps p_p99 p_bad < <(load "$2/upstream-grpc?calls=8" "$1-grpc" --no-busy-poll)
    read -r g1 gc1 < <(grpc_stats)
    read -r c_rps c_p99 c_bad < <(load "$2/upstream-grpc?calls=8&client=per-call" "$1-grpc-per-call" --no-busy-poll)
    read -r g2 gc2 < <(grpc_stats)
    [ $((p_bad + c_bad)) -gt 0 ] && extra=" ($((p_bad + c_bad)) non-2xx or failed)"
    # The channel's connections since the target started: those the one-channel path opened
    # in the warm-up (counted up to the per-call path's warm-up, whose ~4,000 channels are
    # not this path's) and in this column.
    since="$(fmt $((grpc_pooled_warmup + gc1 - gc0))) since start"
    echo "$(fmt "$p_rps") ($p_p99 ms), $(fmt $((gc1 - gc0))) new conns for $(fmt $((g1 - g0))) calls, $since | $(fmt "$c_rps") ($c_p99 ms), $(fmt $((gc2 - gc1))) conns for $(fmt $((g2 - g1))) calls$extra |"
}
fmt() { python3 -c "import sys; print(f'{int(sys.argv[1]):,}')" "$1"; }

{
    echo '| target | idle RSS | /plaintext req/s (p99) | /json req/s (p99) | /upstream?calls=8 pooled: req/s (p99), upstream conns | per-call client: req/s (p99), upstream conns | HTTPS /plaintext, keep-alive: req/s (p99) | HTTPS, new connection per request: req/s (p99), handshakes/s, resumed | /upstream-grpc?calls=8, one channel: req/s (p99), new gRPC conns in the column, conns since the target started | gRPC, channel per call: req/s (p99), gRPC conns |'
    echo '|---|---|---|---|---|---|---|---|---|---|'
} > "$OUT/table.md"
{
    echo "Reliability: /plaintext, closed loop, ${RELIABILITY_SECS} s per row, no warm-up, request timeout ${RELIABILITY_TIMEOUT}; one worker on one core, default backlog."
    echo
    echo '| target | connections | completed of issued | failed: by class | non-2xx |'
    echo '|---|---|---|---|---|'
} > "$OUT/reliability.md"
for t in $TARGETS; do
    read -r _ grpc_conns_at_start < <(grpc_stats)
    grpc_pooled_warmup=0
    "$LOADLAB" lab serve "$t" --pin "$TARGET_CPU" --workers 1 --upstream "$UPSTREAM" > "$OUT/$t.log" 2>&1 &
    serve_pid=$!
    pids+=($serve_pid)
    URL=$(first_match "$OUT/$t.log" '^http://')
    target_pid=$(first_match "$OUT/$t.log" 'pid [0-9]+' | sed -E 's/.*pid ([0-9]+).*/\1/')
    sleep 1
    rss=$(tree_rss "$target_pid")
    warm=$(warmup_of "$t")
    # The manifest's warm-up covers every path measured: a JVM warmed on /plaintext alone met
    # its upstream client's code cold in the pooled column, and that column came out slower
    # than the per-call one that followed it (java-webflux).
    if [ "$warm" -gt 1 ]; then
        paths=(/plaintext "/upstream?calls=8" "/upstream?calls=8&client=per-call")
        has_grpc "$t" && paths+=("/upstream-grpc?calls=8" "/upstream-grpc?calls=8&client=per-call")
        for path in "${paths[@]}"; do
            # A client per call is warmed by a bounded count, not for the whole warm-up: a
            # target leaking a descriptor per client (Ratpack) would otherwise spend its
            # open-files limit before the first column and fail them all.
            case $path in
            *per-call*) length=(-n 500) ;;
            *) length=(-d "${warm}s") ;;
            esac
            if [ "$path" = "/upstream-grpc?calls=8&client=per-call" ]; then
                read -r _ gc < <(grpc_stats)
                grpc_pooled_warmup=$((gc - grpc_conns_at_start))
            fi
            taskset -c "$LOAD_CPU" "$LOADLAB" run -q -t1 -c50 "${length[@]}" --no-busy-poll "$URL$path" >/dev/null 2>&1 || true
        done
    fi
    read -r p_rps p_p99 p_bad < <(load "$URL/plaintext" "$t-plaintext")
    read -r j_rps j_p99 j_bad < <(load "$URL/json" "$t-json")
    read -r r0 c0 < <(stats)
    # The mock upstream shares loadlab's core: a busy-polling loadlab would take the CPU the
    # upstream needs to answer (python-starlette: 5 requests/s busy-polling, 16 without).
    read -r u_rps u_p99 u_bad < <(load "$URL/upstream?calls=8" "$t-pooled" --no-busy-poll)
    read -r r1 c1 < <(stats)
    read -r c_rps c_p99 c_bad < <(load "$URL/upstream?calls=8&client=per-call" "$t-per-call" --no-busy-poll)
    read -r r2 c2 < <(stats)
    grpc=$(grpc_columns "$t" "$URL")
    for c in $RELIABILITY_CONNECTIONS; do
        reliability "$URL/plaintext" "$t" "$c" >> "$OUT/reliability.md"
    done
    kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
    https=$(https_columns "$t")
    bad=$((p_bad + j_bad + u_bad + c_bad))
    row="| $t | $rss MiB | $(fmt "$p_rps") ($p_p99 ms) | $(fmt "$j_rps") ($j_p99 ms) | $(fmt "$u_rps") ($u_p99 ms), $(fmt $((c1 - c0))) conns for $(fmt $((r1 - r0))) calls | $(fmt "$c_rps") ($c_p99 ms), $(fmt $((c2 - c1))) conns for $(fmt $((r2 - r1))) calls | $https $grpc"
    [ "$bad" -gt 0 ] && row="$row ($bad non-2xx or failed)"
    echo "$row" | tee -a "$OUT/table.md"
done
echo
cat "$OUT/table.md"
echo
cat "$OUT/reliability.md"
echo "raw output: $OUT"
