# Shared by the bench/vs-*.sh scripts: sourced, not run. Expects OUT, SECS, ROUNDS, LOAD_CPU.

# Starts nginx pinned to core $SERVER_CPU from a config template (bench/nginx*.conf, with
# __DIR__ and __PORT__), waits until it answers at $2, and stops it when the script exits.
start_nginx() { # template probe-url
    sed -e "s|__DIR__|$OUT|g" -e "s|__PORT__|$PORT|g" "$1" > "$OUT/nginx.conf"
    ulimit -n 65536 2>/dev/null || true
    taskset -c "$SERVER_CPU" nginx -c "$OUT/nginx.conf" -p "$OUT" &
    NGINX_PID=$!
    trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true' EXIT
    for _ in $(seq 50); do
        curl -skf "$2" >/dev/null 2>&1 && return
        sleep 0.1
    done
}

# Runs a command pinned to the load core, its CPU time (user + system seconds) in $OUT/time.
timed() { /usr/bin/time -f "%U %S" -o "$OUT/time" taskset -c "$LOAD_CPU" "$@"; }
cpu_seconds() { awk '{print $1 + $2}' "$OUT/time"; }

# Completed requests in a loadlab JSON result.
loadlab_completed() {
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['measured']['requests']['completed'])" "$1"
}

# Alternates run_<tool> functions (each prints "requests cpu_seconds") for $ROUNDS rounds,
# then prints each tool's median requests/s and CPU per 100k requests, and the ratio of each
# other tool to the first.
alternate() { # tool...
    : > "$OUT/rounds.txt"
    for round in $(seq "$ROUNDS"); do
        for tool in "$@"; do
            read -r n cpu < <("run_$tool")
            echo "$tool $n $cpu" >> "$OUT/rounds.txt"
            awk -v r="$round" -v t="$tool" -v n="$n" -v c="$cpu" -v s="$SECS" 'BEGIN {
                printf "round %d  %-12s %10.0f requests/s  %.2f CPU-s per 100k requests\n", r, t, n / s, c * 100000 / n }'
        done
    done
    python3 - "$OUT/rounds.txt" "$SECS" "$@" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
secs, tools = float(sys.argv[2]), sys.argv[3:]
med = {}
for tool in tools:
    runs = [(int(n), float(c)) for t, n, c in rows if t == tool]
    med[tool] = (statistics.median(n / secs for n, _ in runs),
                 statistics.median(c * 100000 / n for n, c in runs))
print(f"\n{'tool':<12} {'median requests/s':>18} {'CPU-s per 100k':>15}")
for tool, (rps, cpu) in med.items():
    print(f"{tool:<12} {rps:>18,.0f} {cpu:>15.2f}")
base = tools[0]
print()
for ours in tools[1:]:
    print(f"{ours}/{base}: requests/s {med[ours][0] / med[base][0]:.3f}x, "
          f"CPU per request {med[ours][1] / med[base][1]:.3f}x (lower is better)")
PY
}
