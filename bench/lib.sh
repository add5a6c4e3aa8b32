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
# then prints each tool's median requests/s and CPU per 100k requests, how busy the server's
# core was, and each loadlab arm against every other tool as paired rounds: the ratio within
# each round, their centre and its exact 95% interval (bench/paired.py; 6 rounds at least).
# A server whose core was full sets the rate whatever the generator: then requests/s compares
# nothing, and the generators differ in their CPU per request only.
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
                printf "round %d  %-16s %10.0f requests/s  %.2f CPU-s per 100k requests%s\n", r, t, n / s, (n > 0 ? c * 100000 / n : 0), busy }'
        done
    done
    python3 bench/paired.py summary "$OUT/rounds.txt" "$SECS" "$@"
}

# The machine, for a figure's caption: "2 CPUs, AMD EPYC 7B13".
machine() {
    echo "$(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
}
