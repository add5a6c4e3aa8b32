# Sourced by bench/interop.sh: nginx (Debian's), configured here, on loopback ports chosen at
# run time. Counts: its access log, one line per response.

nginx_locations() {
    cat <<CONF
        root $DOCROOT;
        location /chunked/ {
            alias $DOCROOT/;
            # A body filter makes the length unknown, so nginx answers chunked.
            sub_filter_types *;
            sub_filter 'never-in-these-files' 'x';
        }
        location = /204 { return 204; }
        location = /close { keepalive_timeout 0; try_files /1k =404; }
        location = /post { client_max_body_size 2m; return 200 "posted\n"; }
        location = /redirect { return 302 /redirect2; }
        location = /redirect2 { return 301 /1k; }
        location /gz/ { alias $DOCROOT/; gzip on; gzip_types *; gzip_min_length 0; }
$([[ -f $NGINX_BROTLI ]] && echo "        location /br/ { alias $DOCROOT/; brotli on; brotli_types *; brotli_min_length 0; }")
CONF
}

NGINX_BROTLI=/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so

start_nginx() {
    command -v nginx >/dev/null || return 1
    local dir=$OUT/nginx
    mkdir -p "$dir"
    take_ports nginx http h2c tls_all
    {
        cat <<CONF
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
$([[ -f $NGINX_BROTLI ]] && echo "load_module $NGINX_BROTLI;")
events { worker_connections 1024; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    default_type text/plain;
    etag on;
    http2_max_concurrent_streams $MAX_STREAMS;
    server {
        listen 127.0.0.1:${PORT[nginx:http]};
        listen [::1]:${PORT[nginx:http]};
$(nginx_locations)
    }
    server {
        listen 127.0.0.1:${PORT[nginx:h2c]} http2;
        keepalive_requests 100000;
$(nginx_locations)
    }
CONF
        for v in $TLS_VARIANTS mtls; do
            local cert=$v
            [[ $v == mtls ]] && cert=rsa2048
            cat <<CONF
    server {
        listen 127.0.0.1:${PORT[nginx:tls:$v]} ssl http2;
        ssl_certificate $CERTS/$cert.pem;
        ssl_certificate_key $CERTS/$cert.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        # Past 1000 requests (the default; the plain HTTP/1.1 server keeps it) nginx ends a
        # connection, on HTTP/2 with a GOAWAY: the h2 cells would measure that, not streams.
        keepalive_requests 100000;
$([[ $v == mtls ]] && printf '        ssl_client_certificate %s/ca.pem;\n        ssl_verify_client on;\n' "$CERTS")
$(nginx_locations)
    }
CONF
        done
        echo "}"
    } > "$dir/nginx.conf"
    nginx -c "$dir/nginx.conf" -p "$dir" >"$dir/stdout.log" 2>&1 &
    started nginx $!
    # nginx completes the handshake without the required client certificate, then answers 400.
    NO_CERT_ANSWER[nginx]=status:400
    [[ -f $NGINX_BROTLI ]] || NOPE[nginx:br]="libnginx-mod-http-brotli-filter is not installed"
    wait_http nginx "http://127.0.0.1:${PORT[nginx:http]}/1k"
}

count_nginx() { line_count "$OUT/nginx/access.log"; }
