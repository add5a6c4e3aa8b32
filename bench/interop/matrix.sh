# Sourced by bench/interop.sh: every cell of the full matrix for one server (issue 29's list).
# A server's start function sets its ports (PORT), its own paths where they differ from the
# common layout (PATHS), and what it does not offer, with why (NOPE).

all_cells() {
    # Caddy is the matrix's HTTP/3 server: its rows are HTTP/3's (bench/interop/caddy.sh).
    [[ $1 == caddy ]] && { h3_cells "$1"; return 0; }
    local s=$1 http=http://127.0.0.1:${PORT[$1:http]} f etag
    local -A n=([cl-0]=200 [cl-1k]=200 [cl-1m]=30 [chunked-0]=200 [chunked-1k]=200 [chunked-1m]=30)
    cell "$s" "h1 keep-alive" ok 400 "$http$(path "$s" small)" -c 4
    cell "$s" "h1 1500 on 1 connection" ok 1500 "$http$(path "$s" small)" -c 1
    cell "$s" "h1 pipeline 16" ok 4000 "$http$(path "$s" small)" -c 2 --pipeline 16
    cell "$s" "h1 new connection" ok 200 "$http$(path "$s" small)" -c 2 --no-keepalive
    local close_url=$http
    [[ -n ${PORT[$s:close]-} ]] && close_url=http://127.0.0.1:${PORT[$s:close]}
    offered "$s" "server closes" && cell "$s" "server closes" close 100 "$close_url$(path "$s" close)" -c 2
    offered "$s" "http1.0 answer" && cell "$s" "http1.0 answer" ok 200 "$http$(path "$s" http10)" -c 2
    for f in cl-0 cl-1k cl-1m chunked-0 chunked-1k chunked-1m; do
        offered "$s" "$f" && cell "$s" "$f" ok "${n[$f]}" "$http$(path "$s" "$f")" -c 2
    done
    offered "$s" "head" && cell "$s" "head" ok 200 "$http$(path "$s" cl-1k)" -c 2 -m HEAD
    offered "$s" "204" && cell "$s" "204" ok 200 "$http$(path "$s" 204)" -c 2
    if offered "$s" "304"; then
        if [[ -n ${PATHS[$s:304]-} ]]; then
            cell "$s" "304" ok 200 "$http$(path "$s" 304)" -c 2
        else
            etag=$(etag_of "$http/1k")
            cell "$s" "304" ok 200 "$http/1k" -c 2 -H "If-None-Match: $etag"
        fi
    fi
    expect_cell "$s"
    for f in gzip br; do
        offered "$s" "$f" && cell "$s" "$f" "enc:$f" 200 \
            "$(encoding_scenario "$OUT/enc-$s-$f.toml" "$http$(path "$s" "$f")" "$f" \
                "${GZIP_TEXT[$s]:-a compressible line}")" -c 2
    done
    offered "$s" "redirect not followed" && cell "$s" "redirect not followed" ok 200 \
        "$http$(path "$s" redirect)" -c 2
    if offered "$s" "ipv6"; then
        local v6=${PORT[$s:ipv6]:-${PORT[$s:http]}}
        cell "$s" "ipv6" ok 200 "http://[::1]:$v6$(path "$s" small)" -c 2
    fi
    if offered "$s" "h2c prior knowledge"; then
        local h2c=http://127.0.0.1:${PORT[$s:h2c]:-${PORT[$s:http]}}$(path "$s" small)
        cell "$s" "h2c prior knowledge" ok 200 "$h2c" -c 2 --http2
        cell "$s" "h2c 100 streams" ok 2000 "$h2c" -c 1 --http2 --streams 100
    else
        not_offered "$s" "h2c 100 streams" "${NOPE[$s:h2c prior knowledge]}"
    fi
    tls_cell "$s" "tls 1.2" rsa2048 ok 200 -c 2 --tls-version 1.2
    tls_cell "$s" "tls 1.3" rsa2048 ok 200 -c 2 --tls-version 1.3
    tls_cell "$s" "tls new connections" rsa2048 ok 100 -c 2 --no-keepalive
    for f in rsa2048 rsa4096 p256 p384 chain selfsigned; do
        tls_cell "$s" "cert $f" "$f" ok 200 -c 2
    done
    tls_cell "$s" "cert expired" expired refuse:tls_certificate 20 -c 1
    tls_cell "$s" "cert not yet valid" notyet refuse:tls_certificate 20 -c 1
    tls_cell "$s" "cert wrong name" wrongname refuse:tls_certificate 20 -c 1
    tls_cell "$s" "cert unknown CA" unknownca refuse:tls_certificate 20 -c 1
    tls_cell "$s" "mtls" mtls ok 200 -c 2 --cert "$CERTS/client.pem" --key "$CERTS/client.key"
    tls_cell "$s" "mtls without a cert" mtls "${NO_CERT_ANSWER[$s]:-refuse:tls_handshake}" 20 -c 1
    tls_cell "$s" "h2 tls 1 stream" rsa2048 ok 200 -c 2 --http2
    tls_cell "$s" "h2 tls 100 streams" rsa2048 ok 2000 -c 1 --http2 --streams 100
    [[ $s == httpbin ]] && scenario_cell "$s"
    return 0
}
