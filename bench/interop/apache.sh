# Sourced by bench/interop.sh: Apache httpd (Debian's apache2: event MPM, mod_http2, mod_ssl,
# mod_status), configured here from scratch (not /etc/apache2), on loopback ports chosen at
# run time. Counts: its access log, one line per response.

start_apache() {
    command -v apache2 >/dev/null || return 1
    local dir=$OUT/apache m v
    mkdir -p "$dir"
    take_ports apache http h2c tls_all
    {
        echo "ServerRoot $dir"
        echo "ServerName localhost"
        for m in mpm_event authz_core mime dir alias headers setenvif env filter deflate brotli \
            substitute reflector http2 ssl socache_shmcb status; do
            echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_$m.so"
        done
        cat <<CONF
User www-data
Group www-data
PidFile $dir/httpd.pid
Mutex file:$dir default
DefaultRuntimeDir $dir
ErrorLog $dir/error.log
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog $dir/access.log common
StartServers 1
ServerLimit 2
ThreadsPerChild 25
MaxRequestWorkers 50
KeepAlive On
MaxKeepAliveRequests 0
Protocols h2 h2c http/1.1
H2Direct on
H2MaxSessionStreams $MAX_STREAMS
SSLSessionCache shmcb:$dir/ssl_scache(512000)
TypesConfig /etc/mime.types
DefaultType text/plain
AddType text/plain .txt
ForceType text/plain
FileETag MTime Size
DocumentRoot $DOCROOT
<Directory $DOCROOT>
    Require all granted
</Directory>
Alias /chunked/ $DOCROOT/
Alias /gz/ $DOCROOT/
Alias /br/ $DOCROOT/
Alias /close $DOCROOT/1k
Alias /http10 $DOCROOT/1k
<Location /chunked/>
    # A body filter makes the length unknown, so httpd answers chunked.
    SetOutputFilter SUBSTITUTE
    Substitute "s/never-in-these-files/x/"
</Location>
<Location /gz/>
    SetOutputFilter DEFLATE
</Location>
<Location /br/>
    SetOutputFilter BROTLI_COMPRESS
</Location>
SetEnvIf Request_URI "^/close$" nokeepalive
SetEnvIf Request_URI "^/http10$" force-response-1.0
<Location /post>
    SetHandler reflector
</Location>
Redirect 204 /204
Redirect 302 /redirect /redirect2
Redirect 301 /redirect2 /1k
Listen 127.0.0.1:${PORT[apache:http]}
Listen [::1]:${PORT[apache:http]}
Listen 127.0.0.1:${PORT[apache:h2c]}
CONF
        for v in $TLS_VARIANTS mtls; do
            local cert=$v
            [[ $v == mtls ]] && cert=rsa2048
            cat <<CONF
Listen 127.0.0.1:${PORT[apache:tls:$v]}
<VirtualHost 127.0.0.1:${PORT[apache:tls:$v]}>
    SSLEngine on
    SSLProtocol -all +TLSv1.2 +TLSv1.3
    SSLCertificateFile $CERTS/$cert.pem
    SSLCertificateKeyFile $CERTS/$cert.key
$([[ $v == mtls ]] && printf '    SSLVerifyClient require\n    SSLCACertificateFile %s/ca.pem\n' "$CERTS")
</VirtualHost>
CONF
        done
    } > "$dir/httpd.conf"
    apache2 -f "$dir/httpd.conf" -DFOREGROUND >"$dir/stdout.log" 2>&1 &
    started apache $!
    wait_http apache "http://127.0.0.1:${PORT[apache:http]}/1k"
}

count_apache() { line_count "$OUT/apache/access.log"; }
