# Sourced by bench/interop/caddy.sh and bench/vs-h3.sh: Caddy (Debian's 2.6) as a static
# server over HTTPS, h1 and h2 over TCP and h3 over UDP on one port number.

# caddy_run DIR LISTEN CERT KEY BODY: writes DIR/caddy.json (no admin endpoint, no automatic
# HTTPS, its state under DIR, never ~/.local/share/caddy; its access log as JSON lines in
# DIR/access.log; every answer a 200 with BODY) and starts Caddy in the background, on
# $CADDY_CPUS when set (taskset). Its PID is in CADDY_PID.
caddy_run() {
    local dir=$1 listen=$2 cert=$3 key=$4 body=$5
    mkdir -p "$dir"
    cat > "$dir/caddy.json" <<CONF
{
  "admin": {"disabled": true, "config": {"persist": false}},
  "storage": {"module": "file_system", "root": "$dir/data"},
  "logging": {"logs": {
    "default": {"writer": {"output": "file", "filename": "$dir/error.log"},
                "exclude": ["http.log.access"]},
    "access": {"writer": {"output": "file", "filename": "$dir/access.log", "roll": false},
               "encoder": {"format": "json"}, "include": ["http.log.access"]}
  }},
  "apps": {
    "tls": {"certificates": {"load_files": [{"certificate": "$cert", "key": "$key"}]}},
    "http": {"servers": {"main": {
      "listen": ["$listen"],
      "protocols": ["h1", "h2", "h3"],
      "automatic_https": {"disable": true},
      "tls_connection_policies": [{}],
      "logs": {"default_logger_name": "access"},
      "routes": [{"handle": [{"handler": "static_response", "status_code": 200,
                              "body": "$body"}]}]
    }}}
  }
}
CONF
    local pin=()
    [[ -n ${CADDY_CPUS:-} ]] && pin=(taskset -c "$CADDY_CPUS")
    HOME=$dir XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config \
        "${pin[@]}" caddy run --config "$dir/caddy.json" > "$dir/stdout.log" 2>&1 &
    CADDY_PID=$!
}

# caddy_count DIR PROTO: the lines of DIR/access.log for requests over PROTO (HTTP/3.0,
# HTTP/2.0, HTTP/1.1).
caddy_count() {
    if [[ -f $1/access.log ]]; then grep -c "\"proto\":\"$2\"" "$1/access.log" || true; else echo 0; fi
}
