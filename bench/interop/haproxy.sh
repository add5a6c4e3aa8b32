# Sourced by bench/interop.sh: HAProxy (Debian's), twice. As a server (`haproxy`): every
# answer made by `http-request return`. As a proxy (`haproxy-proxy`): in front of loadlab's
# mock upstream (`loadlab upstream`), which answers every path. Counts: HAProxy's own
# counters, the frontends' `req_tot` (HTTP requests received) read over its stats socket. Its
# log on standard output was one line short of them now and then (in a different cell each
# run, loadlab and the counters agreeing): a log is a record, the counters are the count.

haproxy_common() { # dir
    cat <<CONF
global
    stats socket $1/stats.sock mode 600 level user
    log stdout format raw local0
    tune.h2.max-concurrent-streams $MAX_STREAMS
    ssl-default-bind-options ssl-min-ver TLSv1.2
defaults
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 10s
    timeout server 10s
CONF
}

# The binds of a frontend: plain HTTP on 127.0.0.1 and ::1, h2c, and one TLS port per
# certificate (h2 and http/1.1 by ALPN), the mtls one requiring a client certificate.
haproxy_binds() { # name
    local v cert
    echo "    bind 127.0.0.1:${PORT[$1:http]}"
    echo "    bind [::1]:${PORT[$1:http]}"
    echo "    bind 127.0.0.1:${PORT[$1:h2c]} proto h2"
    for v in $TLS_VARIANTS mtls; do
        cert=$v
        [[ $v == mtls ]] && cert=rsa2048
        printf '    bind 127.0.0.1:%s ssl crt %s alpn h2,http/1.1' "${PORT[$1:tls:$v]}" "$CERTS/$cert.both"
        [[ $v == mtls ]] && printf ' verify required ca-file %s' "$CERTS/ca.pem"
        echo
    done
}

start_haproxy() {
    command -v haproxy >/dev/null || return 1
    local dir=$OUT/haproxy
    mkdir -p "$dir"
    take_ports haproxy http h2c close tls_all
    {
        haproxy_common "$dir"
        cat <<CONF
frontend server
$(haproxy_binds haproxy)
    http-request return status 200 content-type text/plain file $DOCROOT/1k if { path /1k }
    http-request return status 200 content-type text/plain file $DOCROOT/0b if { path /0b }
    http-request return status 204 if { path /204 }
    http-request return status 304 if { path /304 }
    http-request return status 200 content-type text/plain string posted if { path /post }
    http-request redirect location /redirect2 code 302 if { path /redirect }
    http-request return status 404
frontend close
    bind 127.0.0.1:${PORT[haproxy:close]}
    option httpclose
    http-request return status 200 content-type text/plain file $DOCROOT/1k
CONF
    } > "$dir/haproxy.cfg"
    haproxy -db -f "$dir/haproxy.cfg" >"$dir/log" 2>"$dir/stderr.log" &
    started haproxy $!
    PATHS[haproxy:close]=/1k
    PATHS[haproxy:304]=/304
    local big="a \`return\` body must fit in one buffer (tune.bufsize, 16 KiB)"
    NOPE[haproxy:cl-1m]=$big
    NOPE[haproxy:chunked-0]="\`return\` answers with a Content-Length"
    NOPE[haproxy:chunked-1k]=${NOPE[haproxy:chunked-0]}
    NOPE[haproxy:chunked-1m]=${NOPE[haproxy:chunked-0]}
    NOPE[haproxy:http1.0 answer]="always answers HTTP/1.1"
    NOPE[haproxy:gzip]="compresses only what a server behind it sends (see haproxy-proxy)"
    NOPE[haproxy:br]="has no brotli compression"
    # `return` answers a POST at once, without a 100 and without reading the body.
    EXPECT_100[haproxy]=close
    wait_http haproxy "http://127.0.0.1:${PORT[haproxy:http]}/1k" || return 1
    wait_http haproxy "http://127.0.0.1:${PORT[haproxy:close]}/1k"
}

# HTTP requests received by every frontend of the HAProxy whose stats socket is in $1 (the
# sum of the FRONTEND rows' req_tot in `show stat`).
haproxy_requests() { # dir
    python3 - "$1/stats.sock" <<'PY'
import csv, socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(sys.argv[1])
    s.sendall(b"show stat\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    rows = csv.DictReader(data.decode().lstrip("# ").splitlines())
    print(sum(int(r["req_tot"] or 0) for r in rows if r["svname"] == "FRONTEND"))
except OSError:
    print(0)
PY
}

# The close frontend has its own port: its cell's URL is built from it.
count_haproxy() { haproxy_requests "$OUT/haproxy"; }

start_haproxy_proxy() {
    command -v haproxy >/dev/null || return 1
    local dir=$OUT/haproxy-proxy
    mkdir -p "$dir"
    take_ports haproxy-proxy http h2c tls_all
    # Port 0: the mock upstream binds a free port itself and prints it (a port picked here and
    # bound later was once taken in between by another program on the machine).
    "$LOADLAB" upstream --port 0 --threads 1 >"$dir/upstream.log" 2>&1 &
    started haproxy-upstream $!
    local port=""
    for _ in $(seq 100); do
        port=$(grep -o 'listening on 127\.0\.0\.1:[0-9]*' "$dir/upstream.log" | grep -o '[0-9]*$' || true)
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || { echo "interop: the mock upstream did not start; see $dir/upstream.log" >&2; return 1; }
    PORT[haproxy-proxy:upstream]=$port
    {
        haproxy_common "$dir"
        cat <<CONF
frontend proxy
$(haproxy_binds haproxy-proxy)
    compression algo gzip
    compression type text/plain application/octet-stream
    default_backend upstream
backend upstream
    server mock 127.0.0.1:${PORT[haproxy-proxy:upstream]}
CONF
    } > "$dir/haproxy.cfg"
    haproxy -db -f "$dir/haproxy.cfg" >"$dir/log" 2>"$dir/stderr.log" &
    started haproxy-proxy $!
    local v
    for v in small cl-1k gzip; do PATHS[haproxy-proxy:$v]=/ok; done
    local mock="the mock upstream answers every path with the same short body"
    for v in "server closes" "http1.0 answer" cl-0 cl-1m chunked-0 chunked-1k chunked-1m 204 304 \
        "redirect not followed" br; do
        NOPE[haproxy-proxy:$v]=$mock
    done
    GZIP_TEXT[haproxy-proxy]=ok
    wait_http haproxy-proxy "http://127.0.0.1:${PORT[haproxy-proxy:http]}/ok"
}

count_haproxy_proxy() { haproxy_requests "$OUT/haproxy-proxy"; }
