# Sourced by bench/interop.sh: Caddy (Debian's, 2.6), the matrix's HTTP/3 server: HTTPS on one
# port number, h1 and h2 over TCP and h3 over UDP (quic-go), with the rsa2048 certificate the
# openssl command line made (bench/interop/certs.sh), every answer a static 200, configured
# by a JSON file under $OUT/caddy (bench/caddy.sh). Counts: its JSON
# access log's lines for HTTP/3 requests ("proto":"HTTP/3.0"; the readiness check's over
# HTTP/2 are not among them). Only HTTP/3 cells run against it (h3_cells): its HTTP/1.1 and
# HTTP/2 are the other servers' rows.

source bench/caddy.sh

start_caddy() {
    command -v caddy >/dev/null || return 1
    take_ports caddy h3
    caddy_run "$OUT/caddy" "127.0.0.1:${PORT[caddy:h3]}" "$CERTS/rsa2048.pem" "$CERTS/rsa2048.key" \
        'loadlab interop: caddy over HTTP/3\n'
    started caddy "$CADDY_PID"
    wait_http caddy "https://127.0.0.1:${PORT[caddy:h3]}/"
}

count_caddy() { caddy_count "$OUT/caddy" HTTP/3.0; }

# h3_cells SERVER [fast]: HTTP/3 closed and open loop, 1 and 100 streams a connection (100:
# quic-go's default MAX_STREAMS), and 0-RTT (a new connection a round of 5 streams, each
# after the first tickets resuming with its requests as early data, every one accepted),
# each checked against the server's count of h3 requests.
h3_cells() {
    local s=$1 url=https://127.0.0.1:${PORT[$1:h3]}/
    local tls=(--http3 --cacert "$CERTS/ca.pem")
    if [[ ${2:-} == fast ]]; then
        cell "$s" "h3 100 streams" ok 500 "$url" -c 1 --streams 100 "${tls[@]}"
        open_cell "$s" "h3 open loop 100 streams" 500 1 "$url" --streams 100 "${tls[@]}"
        cell "$s" "h3 0-rtt new connections" early 200 "$url" -c 2 --streams 5 --no-keepalive \
            --http3-0rtt "${tls[@]}"
        return 0
    fi
    cell "$s" "h3 1 stream" ok 400 "$url" -c 2 "${tls[@]}"
    cell "$s" "h3 100 streams" ok 4000 "$url" -c 1 --streams 100 "${tls[@]}"
    cell "$s" "h3 2x100 streams" ok 8000 "$url" -c 2 --streams 100 "${tls[@]}"
    open_cell "$s" "h3 open loop 1 stream" 500 2 "$url" "${tls[@]}"
    open_cell "$s" "h3 open loop 100 streams" 2000 2 "$url" --streams 100 "${tls[@]}"
    cell "$s" "h3 0-rtt new connections" early 1000 "$url" -c 2 --streams 5 --no-keepalive \
        --http3-0rtt "${tls[@]}"
    cell "$s" "h3 0-rtt 100 streams" early 2000 "$url" -c 1 --streams 100 --no-keepalive \
        --http3-0rtt "${tls[@]}"
    return 0
}
