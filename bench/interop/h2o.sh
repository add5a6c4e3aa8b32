# Sourced by bench/interop.sh: h2o 2.2 (Debian's), configured here, on loopback ports chosen at
# run time: h2 by ALPN over TLS and h2c by prior knowledge. Counts: its access log, one line
# per response.

start_h2o() {
    command -v h2o >/dev/null || return 1
    local dir=$OUT/h2o v
    mkdir -p "$dir"
    # Started as root, h2o serves as nobody, who writes its pid file and logs here.
    chmod 777 "$dir"
    take_ports h2o http tls_all
    {
        cat <<CONF
pid-file: $dir/h2o.pid
error-log: $dir/error.log
access-log: $dir/access.log
http2-max-concurrent-requests-per-connection: $MAX_STREAMS
file.mime.setdefaulttype: text/plain
listen:
  host: 127.0.0.1
  port: ${PORT[h2o:http]}
listen:
  host: "::1"
  port: ${PORT[h2o:http]}
CONF
        for v in $TLS_VARIANTS; do
            cat <<CONF
listen:
  host: 127.0.0.1
  port: ${PORT[h2o:tls:$v]}
  ssl:
    certificate-file: $CERTS/$v.pem
    key-file: $CERTS/$v.key
    minimum-version: TLSv1.2
    # No OCSP fetching (it would reach out to the network): a test CA has no responder.
    ocsp-update-interval: 0
CONF
        done
        cat <<CONF
hosts:
  default:
    paths:
      /redirect:
        redirect:
          url: /redirect2
          status: 302
      /gz:
        file.dir: $DOCROOT
        compress: [gzip]
      /br:
        file.dir: $DOCROOT
        compress: [br]
      /:
        file.dir: $DOCROOT
CONF
    } > "$dir/h2o.conf"
    h2o -c "$dir/h2o.conf" >"$dir/stdout.log" 2>&1 &
    started h2o $!
    NOPE[h2o:http1.0 answer]="always answers HTTP/1.1"
    NOPE[h2o:server closes]="no setting closes a connection per path"
    NOPE[h2o:chunked-0]="serves files with a Content-Length"
    NOPE[h2o:chunked-1k]=${NOPE[h2o:chunked-0]}
    NOPE[h2o:chunked-1m]=${NOPE[h2o:chunked-0]}
    NOPE[h2o:204]="no handler here makes a 204 (mruby is not configured)"
    NOPE[h2o:post 1m expect-100]="a static file refuses POST (405)"
    NOPE[h2o:mtls]="h2o 2.2 has no client-certificate option"
    NOPE[h2o:mtls without a cert]=${NOPE[h2o:mtls]}
    wait_http h2o "http://127.0.0.1:${PORT[h2o:http]}/1k"
}

count_h2o() { line_count "$OUT/h2o/access.log"; }
