# Sourced by bench/interop.sh: go-httpbin (github.com/mccutchen/go-httpbin, built by the script
# at a pinned version), the reference for request features. One process per listener: plain
# HTTP on 127.0.0.1 and ::1, and HTTPS with each certificate of the matrix
# (Go's server offers h2 over TLS by ALPN). Counts: the request lines of all their logs.

start_httpbin() {
    [[ -x $HTTPBIN ]] || return 1
    local dir=$OUT/httpbin v
    mkdir -p "$dir"
    take_ports httpbin http ipv6 tls_all
    "$HTTPBIN" -host 127.0.0.1 -port "${PORT[httpbin:http]}" 2>"$dir/http.log" &
    started httpbin-http $!
    "$HTTPBIN" -host ::1 -port "${PORT[httpbin:ipv6]}" 2>"$dir/ipv6.log" &
    started httpbin-ipv6 $!
    for v in $TLS_VARIANTS; do
        "$HTTPBIN" -host 127.0.0.1 -port "${PORT[httpbin:tls:$v]}" \
            -https-cert-file "$CERTS/$v.pem" -https-key-file "$CERTS/$v.key" 2>"$dir/tls-$v.log" &
        started "httpbin-$v" $!
    done
    wait_http httpbin "http://127.0.0.1:${PORT[httpbin:http]}/get" || return 1
    wait_http httpbin "http://[::1]:${PORT[httpbin:ipv6]}/get" || return 1
    for v in rsa2048 chain; do
        wait_http httpbin "https://127.0.0.1:${PORT[httpbin:tls:$v]}/get" || return 1
    done
    PATHS[httpbin:small]=/bytes/1024
    PATHS[httpbin:cl-0]=/bytes/0
    PATHS[httpbin:cl-1k]=/bytes/1024
    PATHS[httpbin:cl-1m]=/bytes/1048576
    PATHS[httpbin:chunked-0]=/stream-bytes/0
    PATHS[httpbin:chunked-1k]=/stream-bytes/1024
    PATHS[httpbin:chunked-1m]=/stream-bytes/1048576
    PATHS[httpbin:close]=/response-headers?Connection=close
    PATHS[httpbin:204]=/status/204
    PATHS[httpbin:304]=/status/304
    PATHS[httpbin:post]=/anything
    PATHS[httpbin:redirect]=/redirect/3
    PATHS[httpbin:gzip]=/gzip
    GZIP_TEXT[httpbin]=gzipped
    NOPE[httpbin:http1.0 answer]="always answers HTTP/1.1"
    NOPE[httpbin:br]="/brotli answers 501 Not Implemented"
    NOPE[httpbin:h2c prior knowledge]="Go's server speaks h2c only behind an h2c handler"
    NOPE[httpbin:mtls]="no client-certificate option"
    NOPE[httpbin:mtls without a cert]="no client-certificate option"
    return 0
}

count_httpbin() { cat "$OUT"/httpbin/*.log 2>/dev/null | grep -c ' status=' || true; }
