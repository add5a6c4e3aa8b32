# Sourced by bench/interop.sh: one cell = one short loadlab run checked against the server's
# own count. Verdicts: "exact" (loadlab completed every request, none failed, and the server
# counted exactly as many), "refused as expected" (a certificate loadlab must refuse: no
# request completed, the expected failure class, nothing reached the server), "not offered"
# (the server has no such feature here, with why), "FAIL" (with the numbers).

record() { # server feature verdict detail
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$OUT/cells.tsv"
    printf '%-14s %-24s %-20s %s\n' "$1" "$2" "$3" "$4" >&2
}

not_offered() { record "$1" "$2" "not offered" "$3"; }

# The server's count, polled until it reaches `want` more than `before` (a server logs a
# response after sending it) or 3 s pass (POLL_STEPS[server] x 50 ms); prints the difference.
server_delta() { # server before want
    local now
    for _ in $(seq "${POLL_STEPS[$1]:-60}"); do
        now=$("count_${1//-/_}")
        (( now - $2 >= $3 )) && break
        sleep 0.05
    done
    echo $(( $("count_${1//-/_}") - $2 ))
}

# Reads a result JSON: completed failed connections_opened "class=n,..." first-message
# encodings (scenario runs: the content encodings seen) statuses early (HTTP/3's 0-RTT:
# requests accepted/sent early/rejected).
summarise() {
    python3 - "$1" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("0\t0\t0\tno-result\tloadlab wrote no result\t-\t-\t0/0/0"); sys.exit()
m = d["measured"]
errors = ",".join(f"{k}={v}" for k, v in sorted(m["errors"].items())) or "-"
details = m.get("error_details") or {}
msg = "; ".join(str(v) for v in details.values()).replace("\t", " ").replace("\n", " ") or "-"
enc = set()
for s in (d.get("scenario") or {}).get("steps", []):
    enc.update(k for k, v in (s.get("content_encodings") or {}).items() if v)
statuses = ",".join(f"{k}:{v}" for k, v in sorted(m["status_codes"].items())) or "-"
e = m.get("early_data") or {}
early = f'{e.get("requests_accepted", 0)}/{e.get("requests", 0)}/{e.get("requests_rejected", 0)}'
print(f'{m["requests"]["completed"]}\t{m["requests"]["failed"]}\t{m["connections_opened"]}\t'
      f'{errors}\t{msg[:300]}\t{",".join(sorted(enc)) or "-"}\t{statuses}\t{early}')
PY
}

# cell SERVER FEATURE EXPECT N URL [loadlab run flags...]
# EXPECT: ok | scenario (ok, and the URL is a scenario file) | close (ok, and one connection
# per request) | status:CODE (ok, every answer CODE) | refuse:CLASS | enc:NAME (ok, and every response had Content-Encoding NAME:
# the URL is then a scenario file) | open:SECONDS (ok, an open loop run for SECONDS instead
# of -n: its schedule sends exactly N, see open_cell) | early (ok, and some requests went
# as HTTP/3 0-RTT early data, every one of them accepted).
cell() {
    local server=$1 feature=$2 expect=$3 n=$4
    shift 4
    local tag=$server-${feature//[^A-Za-z0-9.-]/_}
    local json=$OUT/runs/$tag.json before delta want
    mkdir -p "$OUT/runs"
    rm -f "$json"
    before=$("count_${server//-/_}")
    local args=(run -q --no-pm-qos -t 1 --timeout 10s --json "$json")
    if [[ $expect == open:* ]]; then args+=(-d "${expect#open:}s"); else args+=(-n "$n"); fi
    if [[ $expect == enc:* || $expect == scenario ]]; then
        args+=(--scenario "$@")
    else
        args+=("$@")
    fi
    timeout 120 "$LOADLAB" "${args[@]}" > "$OUT/runs/$tag.log" 2>&1 || true
    local completed failed opened errors msg enc statuses early
    IFS=$'\t' read -r completed failed opened errors msg enc statuses early < <(summarise "$json")
    want=$completed
    [[ $expect == refuse:* ]] && want=1
    delta=$(server_delta "$server" "$before" "$want")
    local numbers="loadlab $completed/$n completed, $failed failed ($errors), server counted $delta"
    case $expect in
        refuse:*)
            local class=${expect#refuse:}
            if [[ $completed == 0 && $errors == "$class="* && $delta == 0 ]]; then
                record "$server" "$feature" "refused as expected" "$class: $msg"
            else
                record "$server" "$feature" FAIL "$numbers; wanted $class: $msg"
            fi
            ;;
        *)
            local ok=1
            [[ $completed == "$n" && $failed == 0 && $delta == "$n" ]] || ok=0
            [[ $expect == close && $opened != "$n" ]] && ok=0
            [[ $expect == enc:* && $enc != "${expect#enc:}" ]] && ok=0
            [[ $expect == status:* && $statuses != "${expect#status:}:$n" ]] && ok=0
            # early: accepted/sent/rejected, some sent, all accepted.
            local taken=${early%%/*} rest=${early#*/}
            [[ $expect == early && ($taken == 0 || $taken != "${rest%%/*}") ]] && ok=0
            local extra=""
            [[ $expect == close ]] && extra=", $opened connections"
            [[ $expect == enc:* ]] && extra=", encodings $enc"
            [[ $expect == early ]] && extra=", early data accepted/sent/rejected $early"
            if [[ $ok == 1 ]]; then
                record "$server" "$feature" exact "$n = $delta ($statuses$extra)"
            else
                record "$server" "$feature" FAIL "$numbers ($statuses$extra): $msg"
            fi
            ;;
    esac
}

# open_cell SERVER FEATURE RATE SECONDS URL [flags...]: an open loop of RATE requests a second
# for SECONDS; a uniform schedule sends exactly RATE x SECONDS, each of which must complete
# and be counted by the server.
open_cell() {
    local s=$1 feature=$2 rate=$3 secs=$4 url=$5
    shift 5
    cell "$s" "$feature" "open:$secs" $(( rate * secs )) "$url" --rate "$rate" "$@"
}

# A one-step scenario: GET URL with Accept-Encoding ENC, checked on status and (gzip and br,
# which loadlab decodes) on the decoded body containing TEXT.
encoding_scenario() { # file url enc text
    {
        printf 'name = "encoding"\n[[steps]]\nname = "get"\nurl = "%s"\n' "$2"
        printf 'headers = { "Accept-Encoding" = "%s" }\n' "$3"
        printf '[[steps.checks]]\nstatus = 200\n'
        [[ $3 == gzip || $3 == br ]] && printf '[[steps.checks]]\nbody_contains = "%s"\n' "$4"
    } > "$1"
    echo "$1"
}

# path SERVER FEATURE: the server's path for a feature (the common layout unless it has its own).
path() {
    local p=${PATHS[$1:$2]-}
    if [[ -n $p ]]; then echo "$p"; return; fi
    case $2 in
        small | cl-1k) echo /1k ;;
        cl-0) echo /0b ;;
        cl-1m) echo /1m ;;
        chunked-0) echo /chunked/0b ;;
        chunked-1k) echo /chunked/1k ;;
        chunked-1m) echo /chunked/1m ;;
        gzip) echo /gz/1k ;;
        br) echo /br/1k ;;
        *) echo "/$2" ;;
    esac
}

# The ETag of the server's 1 KiB document, for a conditional GET answered 304.
etag_of() { curl -s -D - -o /dev/null "$1" | awk 'tolower($1) == "etag:" {sub(/\r$/, ""); print $2}'; }

# offered SERVER FEATURE: false (and the cell recorded as not offered) when NOPE[...] says so.
offered() {
    if [[ -n ${NOPE[$1:$2]-} ]]; then not_offered "$1" "$2" "${NOPE[$1:$2]}"; return 1; fi
}

# The 1 MiB POST with `Expect: 100-continue` (RFC 9110 10.1.1): loadlab sends the head, and
# the body only after the server's 100 (nginx, Apache and go-httpbin send one when they read
# the body). A server that answers first (HAProxy's `return`) gets no body, and the connection
# ends with its answer: EXPECT_100[server]=close checks one connection per request.
expect_cell() {
    local s=$1
    offered "$s" "post 1m expect-100" || return 0
    cell "$s" "post 1m expect-100" "${EXPECT_100[$s]:-ok}" 20 \
        "http://127.0.0.1:${PORT[$s:http]}$(path "$s" post)" -c 2 -m POST \
        --body-file "$DOCROOT/1m" -H "Expect: 100-continue" \
        -H "Content-Type: application/octet-stream"
}

fast_cells() {
    # Caddy (when installed) is in the fast subset for HTTP/3 alone.
    [[ $1 == caddy ]] && { h3_cells "$1" fast; return 0; }
    local s=$1 http=http://127.0.0.1:${PORT[$1:http]}
    # HAProxy (when installed) is in the fast subset for its answer before the body alone.
    [[ $s == haproxy ]] && { expect_cell "$s"; return 0; }
    expect_cell "$s"
    cell "$s" "h1 keep-alive" ok 400 "$http$(path "$s" small)" -c 4
    cell "$s" "h1 new connection" ok 200 "$http$(path "$s" small)" -c 2 --no-keepalive
    # 16 requests written ahead of their answers (issue 54): past nginx's 1000 requests a
    # connection (keepalive_requests), its close mid-pipeline has the rest sent again.
    cell "$s" "h1 pipeline 16" ok 4000 "$http$(path "$s" small)" -c 2 --pipeline 16
    tls_cell "$s" "https rsa2048" rsa2048 ok 200 -c 2
    tls_cell "$s" "https chain" chain ok 200 -c 2
    tls_cell "$s" "https req -x509 (CA:TRUE)" selfsigned ok 200 -c 2
    # Under every server's MAX_CONCURRENT_STREAMS: the full matrix goes over it.
    tls_cell "$s" "h2 tls 8 streams" rsa2048 ok 800 -c 1 --http2 --streams 8
    [[ $s == httpbin ]] && scenario_cell "$s"
    # Apache refuses a missing client certificate over TLS 1.3 with an alert after the
    # handshake: the refusal must say so, with the fix (the test reads the message).
    [[ $s == apache ]] && tls_cell "$s" "mtls without a cert, tls 1.3" mtls \
        refuse:tls_handshake 5 -c 1 --tls-version 1.3
    return 0
}

# tls_cell SERVER FEATURE VARIANT EXPECT N [flags...]: over the port serving VARIANT's
# certificate, trusting the root CA (or, for selfsigned, the certificate itself).
tls_cell() {
    local s=$1 feature=$2 v=$3 expect=$4 n=$5
    shift 5
    offered "$s" "$feature" || return 0
    local ca=$CERTS/ca.pem
    [[ $v == selfsigned ]] && ca=$CERTS/selfsigned.pem
    if [[ -z ${PORT[$s:tls:$v]-} ]]; then
        not_offered "$s" "$feature" "no TLS listener for the $v certificate"
        return 0
    fi
    cell "$s" "$feature" "$expect" "$n" "https://127.0.0.1:${PORT[$s:tls:$v]}$(path "$s" small)" \
        --cacert "$ca" "$@"
}
# Every scenario feature (scenarios/journeys/httpbin-features.toml) against go-httpbin: 16
# requests an iteration, every check passing, each request counted by the server.
scenario_cell() {
    cell "$1" "scenario: every feature" scenario 320 "$ROOT/scenarios/journeys/httpbin-features.toml" \
        --var "URL=http://127.0.0.1:${PORT[$1:http]}" -c 2
}
