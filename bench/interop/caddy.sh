# Sourced by bench/interop.sh: Caddy (Debian's, 2.6), the matrix's HTTP/3 server: HTTPS on one
# port number, h1 and h2 over TCP and h3 over UDP (quic-go), with the rsa2048 certificate the
# openssl command line made (bench/interop/certs.sh), every answer a static 200. It is
# configured by a JSON file written here: no admin endpoint, no automatic HTTPS, its state
# under $OUT/caddy (never ~/.local/share/caddy), its access log as JSON lines. Counts: the
# access log's lines for HTTP/3 requests ("proto":"HTTP/3.0"; the readiness check's over
# HTTP/2 are not among them). Only HTTP/3 cells run against it (h3_cells): its HTTP/1.1 and
# HTTP/2 are the other servers' rows.

start_caddy() {
    command -v caddy >/dev/null || return 1
    local dir=$OUT/caddy
    mkdir -p "$dir"
    take_ports caddy h3
    cat > "$dir/caddy.json" <<CONF
{
  "admin": {"disabled": true, "config": {"persist": false}},
  "storage": {"module": "file_system", "root": "$dir/data"},
  "logging": {"logs": {
    "default": {"writer": {"output": "file", "filename": "$dir/error.log"},
                "exclude": ["http.log.access"]},
    "access": {"writer": {"output": "file", "filename": "$dir/access.log"},
               "encoder": {"format": "json"}, "include": ["http.log.access"]}
  }},
  "apps": {
    "tls": {"certificates": {"load_files": [
      {"certificate": "$CERTS/rsa2048.pem", "key": "$CERTS/rsa2048.key"}]}},
    "http": {"servers": {"h3": {
      "listen": ["127.0.0.1:${PORT[caddy:h3]}"],
      "protocols": ["h1", "h2", "h3"],
      "automatic_https": {"disable": true},
      "tls_connection_policies": [{}],
      "logs": {"default_logger_name": "access"},
      "routes": [{"handle": [{"handler": "static_response", "status_code": 200,
                              "body": "loadlab interop: caddy over HTTP/3\n"}]}]
    }}}
  }
}
CONF
    HOME=$dir XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config \
        caddy run --config "$dir/caddy.json" >"$dir/stdout.log" 2>&1 &
    started caddy $!
    wait_http caddy "https://127.0.0.1:${PORT[caddy:h3]}/"
}

count_caddy() {
    local log=$OUT/caddy/access.log
    if [[ -f $log ]]; then grep -c '"proto":"HTTP/3.0"' "$log" || true; else echo 0; fi
}

# h3_cells SERVER [fast]: HTTP/3 closed and open loop, 1 and 100 streams a connection (100:
# quic-go's default MAX_STREAMS), each checked against the server's count of h3 requests.
h3_cells() {
    local s=$1 url=https://127.0.0.1:${PORT[$1:h3]}/
    local tls=(--http3 --cacert "$CERTS/ca.pem")
    if [[ ${2:-} == fast ]]; then
        cell "$s" "h3 100 streams" ok 500 "$url" -c 1 --streams 100 "${tls[@]}"
        open_cell "$s" "h3 open loop 100 streams" 500 1 "$url" --streams 100 "${tls[@]}"
        return 0
    fi
    cell "$s" "h3 1 stream" ok 400 "$url" -c 2 "${tls[@]}"
    cell "$s" "h3 100 streams" ok 4000 "$url" -c 1 --streams 100 "${tls[@]}"
    cell "$s" "h3 2x100 streams" ok 8000 "$url" -c 2 --streams 100 "${tls[@]}"
    open_cell "$s" "h3 open loop 1 stream" 500 2 "$url" "${tls[@]}"
    open_cell "$s" "h3 open loop 100 streams" 2000 2 "$url" --streams 100 "${tls[@]}"
    return 0
}
