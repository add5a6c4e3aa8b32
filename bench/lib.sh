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

# The server's CPU seconds so far: nginx's master and workers (started by start_nginx), or
# "-" when this script started no nginx.
server_cpu() {
    [ -n "${NGINX_PID:-}" ] || { echo -; return; }
    local ticks=0 pid u s
    for pid in "$NGINX_PID" $(pgrep -P "$NGINX_PID"); do
        read -r u s < <(awk '{print $14, $15}' "/proc/$pid/stat" 2>/dev/null) || continue
        ticks=$((ticks + u + s))
    done
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# Alternates run_<tool> functions (each prints "requests cpu_seconds") for $ROUNDS rounds,
# then prints each tool's median requests/s and CPU per 100k requests, the ratio of each
# other tool to the first (of the medians, and the median of each round's ratio to the first
# tool's round beside it), and how busy the server's core was. A server whose core was full
# sets the rate whatever the generator: then requests/s compares nothing, and the generators
# differ in their CPU per request only.
alternate() { # tool...
    : > "$OUT/rounds.txt"
    for round in $(seq "$ROUNDS"); do
        for tool in "$@"; do
            local before after server
            before=$(server_cpu)
            read -r n cpu < <("run_$tool")
            after=$(server_cpu)
            server=$(awk -v a="$after" -v b="$before" 'BEGIN { if (a == "-") print "-"; else printf "%.2f", a - b }')
            echo "$round $tool $n $cpu $server" >> "$OUT/rounds.txt"
            awk -v r="$round" -v t="$tool" -v n="$n" -v c="$cpu" -v s="$SECS" -v v="$server" 'BEGIN {
                busy = v == "-" ? "" : sprintf("  server core %3.0f%% busy", v * 100 / s)
                printf "round %d  %-16s %10.0f requests/s  %.2f CPU-s per 100k requests%s\n", r, t, n / s, c * 100000 / n, busy }'
        done
    done
    python3 - "$OUT/rounds.txt" "$SECS" "$@" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
secs, tools = float(sys.argv[2]), sys.argv[3:]
runs = {t: {int(r): (int(n), float(c), None if v == "-" else float(v))
            for r, tt, n, c, v in rows if tt == t} for t in tools}
med = {}
for tool in tools:
    rs = runs[tool].values()
    busy = [v / secs for _, _, v in rs if v is not None]
    med[tool] = (statistics.median(n / secs for n, _, _ in rs),
                 statistics.median(c * 100000 / n for n, c, _ in rs),
                 statistics.median(busy) if busy else None)
print(f"\n{'tool':<16} {'median requests/s':>18} {'CPU-s per 100k':>15} {'server core busy':>17}")
for tool, (rps, cpu, busy) in med.items():
    b = f"{busy * 100:.0f}%" if busy is not None else "-"
    print(f"{tool:<16} {rps:>18,.0f} {cpu:>15.2f} {b:>17}")
base = tools[0]
print()
for ours in tools[1:]:
    paired = [runs[ours][r][0] / runs[base][r][0] for r in runs[ours] if r in runs[base]]
    paired_cpu = [(runs[ours][r][1] / runs[ours][r][0]) / (runs[base][r][1] / runs[base][r][0])
                  for r in runs[ours] if r in runs[base]]
    print(f"{ours}/{base}: requests/s {med[ours][0] / med[base][0]:.3f}x, "
          f"CPU per request {med[ours][1] / med[base][1]:.3f}x (lower is better); "
          f"round by round, medians: {statistics.median(paired):.3f}x and "
          f"{statistics.median(paired_cpu):.3f}x")
full = [t for t in tools if med[t][2] is not None and med[t][2] >= 0.95]
if full:
    print(f"\nthe server's core was at least 95% busy (median of the rounds) under {', '.join(full)}: "
          "there the rate is the server's limit, not the generator's, and requests/s compares "
          "the server's cost per request under each tool; the generators differ in CPU per request.")
PY
}
