#!/usr/bin/env bash
# The limit loadlab cannot see on its own host (issue 52): a path between generator and
# server that carries less than the server serves. Namespaced hosts (bench/netns-lib.sh): a
# serial server of 240 requests/s answering 12 KB (loadlab-fixture --service-us 4166, CPU
# spun) with the server's `loadlab agent`, a coordinator, three `loadlab agent --generator`
# hosts; caps are tbf on the bridge's side of a link (invisible to the host), a delay is a
# userspace relay (bench/delay-relay.py: these kernels have no netem); HTTP/2 is nginx's and
# HTTP/3 caddy's, when installed. Each case runs one
# capacity search from the coordinator with --generators and --agent, and prints one row:
# case | what loadlab said | the truth. Bounded (each search at most ~60 s), namespaces only,
# everything removed on exit. Usage (root):
#   bash bench/path-limits.sh            # LOADLAB=target/debug/loadlab to use a debug build
source "$(dirname "$0")/netns-lib.sh"
OUT=${OUT:-$ROOT/bench/out/path-limits-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
RATE=10mbit
lab_up 3
nsenter --net="/run/netns/$TAG-sv" -- env HOST=198.18.0.1 PORT=8081 "$FIXTURE" --service-us 4166 > "$OUT/fixture.log" 2>&1 &
PIDS+=($!)
agent server sv 198.18.0.1:7071 --port 8081
for g in g1 g2 g3; do agent "$g" "$g" "198.18.0.$((10 + ${g#g})):7070" --generator; done
fleet "$OUT/all.toml" g1 g2 g3
fleet "$OUT/g1.toml" g1
# The delay: a relay on the server's host, 25 ms each way, in front of the same server.
nsenter --net="/run/netns/$TAG-sv" -- python3 "$ROOT/bench/delay-relay.py" 198.18.0.1 8082 198.18.0.1 8081 25 > "$OUT/relay.log" 2>&1 &
PIDS+=($!)
# HTTP/2: nginx, cleartext by prior knowledge (h2c), a 12 KB file, on the server's host.
mkdir -p "$OUT/nginx/www"; head -c 12288 /dev/zero | tr '\0' x > "$OUT/nginx/www/12k"
cat > "$OUT/nginx/nginx.conf" <<NGINX
worker_processes 1; daemon off; pid $OUT/nginx/nginx.pid; error_log $OUT/nginx/error.log warn;
events { worker_connections 4096; }
http { access_log off; server { listen 198.18.0.1:8083 http2; root $OUT/nginx/www; } }
NGINX
if command -v nginx >/dev/null; then
    nsenter --net="/run/netns/$TAG-sv" -- nginx -c "$OUT/nginx/nginx.conf" -p "$OUT/nginx" > "$OUT/nginx.log" 2>&1 &
    PIDS+=($!)
fi
# HTTP/3: caddy (quic-go), a self-signed certificate for the server's address, the same 12 KB
# file on its own port (UDP for HTTP/3), and a second server's agent that samples it (over
# QUIC the rule needs the server's CPU: docs/path.md).
if command -v caddy >/dev/null; then
    mkdir -p "$OUT/caddy"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=198.18.0.1 -addext subjectAltName=IP:198.18.0.1 \
        -keyout "$OUT/caddy/key.pem" -out "$OUT/caddy/cert.pem" 2>/dev/null
    cat > "$OUT/caddy/Caddyfile" <<CADDY
{
	admin off
	default_sni 198.18.0.1
	storage file_system $OUT/caddy/data
}
https://198.18.0.1:8443 {
	tls $OUT/caddy/cert.pem $OUT/caddy/key.pem
	root * $OUT/nginx/www
	file_server
}
CADDY
    nsenter --net="/run/netns/$TAG-sv" -- env HOME="$OUT/caddy" XDG_DATA_HOME="$OUT/caddy" \
        XDG_CONFIG_HOME="$OUT/caddy" caddy run --config "$OUT/caddy/Caddyfile" --adapter caddyfile \
        > "$OUT/caddy.log" 2>&1 &
    PIDS+=($!)
fi
sleep 1
command -v caddy >/dev/null && agent server-h3 sv 198.18.0.1:7072 --port 8443
head -c 12288 /dev/zero | tr '\0' y > "$OUT/body-12k"

# search NAME FLEET URL ARGS...: one capacity search; its text in $OUT/NAME.txt. The server's
# agent is $AGENT's (server unless told).
search() {
    local name=$1 fleet=$2 url=$3; shift 3
    # shellcheck disable=SC2046
    timeout 120 nsenter --net="/run/netns/$TAG-co" -- "$LOADLAB" capacity --no-save \
        --slo 'p99<200ms' -d 2s --warmup 500ms --cooldown 500ms --tolerance 0.05 \
        --start 120 --max-rate 2000 --repeats 1 --generators "$fleet" \
        $(cat "$OUT/${AGENT:-server}.flags") --json "$OUT/$name.json" "$@" "$url" > "$OUT/$name.txt" 2>&1 || true
}

# said NAME: what loadlab said, in one cell: the finding and any path it named.
said() { python3 - "$OUT/$1.json" "$OUT/$1.txt" <<'PY'
import json, re, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"no result ({e})"); sys.exit()
f = d.get("finding") or {}
if f.get("kind") == "capacity":
    cell = f"capacity {f.get('estimate', 0):.0f}/s"
else:
    cell = (d.get("verdict") or f.get("kind") or "?").split(";")[0]
named = sorted(set(re.findall(r"warning: the path[^\n]*?generator (g\d)", open(sys.argv[2]).read())))
if named:
    cell += "; path check named " + ", ".join(named)
print(" ".join(cell.split())[:140])
PY
}

declare -a ROWS
row() { ROWS+=("$1 | $(said "$2") | $3"); }

S=http://198.18.0.1:8081/bytes?n=12288
search cpu "$OUT/all.toml" "$S";                 row "CPU-bound server, 3 generators, no cap" cpu "the server: 240/s"
cap g1 $RATE
search one-of-three "$OUT/all.toml" "$S";        row "10 Mbit/s downlink on g1 of 3" one-of-three "the server: 240/s (the paths carry 291/s at equal shares); g1's path the slowest"
search g1-alone "$OUT/g1.toml" "$S";             row "10 Mbit/s downlink, g1 alone" g1-alone "the path: ~97/s of 12 KB; the server serves 240/s"
cap g2 $RATE; cap g3 $RATE
search all-capped "$OUT/all.toml" "$S";          row "10 Mbit/s downlink on all 3" all-capped "the server: 240/s (the paths carry 291/s)"
uncap g1; uncap g2; uncap g3
cap sv $RATE
search uplink "$OUT/g1.toml" "http://198.18.0.1:8081/" -m POST --body-file "$OUT/body-12k"
row "10 Mbit/s uplink, 12 KB bodies, g1" uplink "the path: ~97/s of 12 KB requests; the server serves 240/s"
uncap sv
search delay "$OUT/all.toml" "http://198.18.0.1:8082/bytes?n=12288"
row "25 ms each way, no cap (relay), 3 generators" delay "the server: 240/s, no path at fault"
if command -v nginx >/dev/null; then
    cap g1 $RATE
    search h2 "$OUT/g1.toml" "http://198.18.0.1:8083/12k" --http2
    row "HTTP/2 (nginx h2c, 12 KB), 10 Mbit/s on g1 alone" h2 "the path: ~97/s; nginx serves thousands"
    uncap g1
fi
if command -v caddy >/dev/null; then
    cap g1 $RATE
    AGENT=server-h3 search h3 "$OUT/g1.toml" "https://198.18.0.1:8443/12k" --http3 --insecure
    row "HTTP/3 (caddy, 12 KB), 10 Mbit/s on g1 alone" h3 "the path: ~97/s; caddy serves thousands"
    uncap g1
fi

echo "== path limits: what loadlab said against the truth (out: $OUT)"
echo "case | what loadlab said | the truth"
echo "---|---|---"
printf '%s\n' "${ROWS[@]}"
