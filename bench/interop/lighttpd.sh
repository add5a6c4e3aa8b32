# Sourced by bench/interop.sh: lighttpd (Debian's, with mod_openssl and mod_deflate),
# configured here, on loopback ports chosen at run time. It speaks h2 by ALPN and h2c by prior
# knowledge on every port. Counts: its access log, one line per response, which lighttpd writes
# in batches (at least once a second): its counts are waited for longer.

start_lighttpd() {
    command -v lighttpd >/dev/null || return 1
    local dir=$OUT/lighttpd v cert
    mkdir -p "$dir"
    take_ports lighttpd http tls_all
    {
        cat <<CONF
server.modules = ("mod_accesslog", "mod_openssl", "mod_deflate", "mod_redirect", "mod_alias")
server.document-root = "$DOCROOT"
server.bind = "127.0.0.1"
server.port = ${PORT[lighttpd:http]}
server.pid-file = "$dir/lighttpd.pid"
server.errorlog = "$dir/error.log"
server.max-keep-alive-requests = 100000
accesslog.filename = "$dir/access.log"
mimetype.assign = ("" => "text/plain")
alias.url = ("/gz/" => "$DOCROOT/", "/br/" => "$DOCROOT/", "/close" => "$DOCROOT/1k")
url.redirect = ("^/redirect\$" => "/redirect2", "^/redirect2\$" => "/1k")
url.redirect-code = 302
\$HTTP["url"] =^ "/gz/" { deflate.mimetypes = ("text/plain") deflate.allowed-encodings = ("gzip") deflate.min-compress-size = 0 }
\$HTTP["url"] =^ "/br/" { deflate.mimetypes = ("text/plain") deflate.allowed-encodings = ("br") deflate.min-compress-size = 0 }
\$HTTP["url"] == "/close" { server.max-keep-alive-requests = 0 }
\$SERVER["socket"] == "[::1]:${PORT[lighttpd:http]}" { }
CONF
        for v in $TLS_VARIANTS mtls; do
            cert=$v
            [[ $v == mtls ]] && cert=rsa2048
            cat <<CONF
\$SERVER["socket"] == "127.0.0.1:${PORT[lighttpd:tls:$v]}" {
    ssl.engine = "enable"
    ssl.pemfile = "$CERTS/$cert.pem"
    ssl.privkey = "$CERTS/$cert.key"
    ssl.openssl.ssl-conf-cmd = ("MinProtocol" => "TLSv1.2")
$([[ $v == mtls ]] && printf '    ssl.ca-file = "%s/ca.pem"\n    ssl.verifyclient.activate = "enable"\n    ssl.verifyclient.enforce = "enable"\n' "$CERTS")
}
CONF
        done
    } > "$dir/lighttpd.conf"
    lighttpd -D -f "$dir/lighttpd.conf" >"$dir/stdout.log" 2>&1 &
    started lighttpd $!
    NOPE[lighttpd:http1.0 answer]="always answers HTTP/1.1"
    NOPE[lighttpd:chunked-0]="serves files with a Content-Length"
    NOPE[lighttpd:chunked-1k]=${NOPE[lighttpd:chunked-0]}
    NOPE[lighttpd:chunked-1m]=${NOPE[lighttpd:chunked-0]}
    NOPE[lighttpd:204]="no module here makes a 204 (mod_magnet is not installed)"
    NOPE[lighttpd:post 1m expect-100]="a static file refuses POST (405)"
    POLL_STEPS[lighttpd]=160
    wait_http lighttpd "http://127.0.0.1:${PORT[lighttpd:http]}/1k"
}

# lighttpd also logs a "PRI * HTTP/2.0" line for each HTTP/2 connection: not a request.
count_lighttpd() { grep -vc '"PRI \* HTTP/2.0"' "$OUT/lighttpd/access.log" 2>/dev/null || true; }
