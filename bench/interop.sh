#!/usr/bin/env bash
# The interop matrix (issue 29): loadlab against HTTP servers no one here wrote: nginx,
# Apache httpd (event MPM, mod_http2, mod_ssl), HAProxy (as a server with `http-request
# return`, and as a proxy in front of `loadlab upstream`), lighttpd, h2o, go-httpbin and
# Caddy (its HTTP/3 rows: closed and open loop, 1 and 100 streams). Each
# cell is a short loadlab run whose completed count must equal the server's own count (its
# access log, or go-httpbin's request log); refused certificates must fail with the expected
# failure class and no request reaching the server. Every certificate is made by the openssl
# command line (bench/interop/certs.sh).
#
#   bash bench/interop.sh                 # the full matrix (installs what is missing, as root)
#   bash bench/interop.sh --fast          # the test suite's subset: nginx, Apache, go-httpbin
#                                         # (and HAProxy's expect-100 cell and two of Caddy's
#                                         # HTTP/3 cells, when installed)
#   LOADLAB=path/to/loadlab INTEROP_OUT=dir bash bench/interop.sh --fast
#
# Output: the table on stdout and in $OUT/table.txt, every cell in $OUT/cells.tsv (server,
# feature, verdict, detail), the wall time last. Exit 1 when a cell FAILs, 2 on a setup error.
# Servers run on loopback ports chosen at run time, from configurations written into $OUT, and
# are stopped (by the PIDs started here, nothing else) when the script exits.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START_S=$(date +%s)
FAST=0
[[ ${1:-} == --fast ]] && FAST=1
GO_HTTPBIN_VERSION=v2.26.0
MAX_STREAMS=16
TLS_VARIANTS="rsa2048 rsa4096 p256 p384 chain selfsigned expired notyet wrongname unknownca"

if [[ $FAST == 0 ]]; then
    pkgs=()
    command -v nginx >/dev/null || pkgs+=(nginx libnginx-mod-http-brotli-filter)
    command -v apache2 >/dev/null || pkgs+=(apache2)
    command -v haproxy >/dev/null || pkgs+=(haproxy)
    command -v lighttpd >/dev/null || pkgs+=(lighttpd lighttpd-mod-openssl lighttpd-mod-deflate)
    command -v h2o >/dev/null || pkgs+=(h2o)
    command -v caddy >/dev/null || pkgs+=(caddy)
    if [[ ${#pkgs[@]} -gt 0 && $(id -u) -eq 0 ]]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    fi
fi
HTTPBIN=$ROOT/target/interop-tools/go-httpbin
if [[ $(cat "$HTTPBIN.version" 2>/dev/null) != "$GO_HTTPBIN_VERSION" ]] && command -v go >/dev/null; then
    GOBIN=$ROOT/target/interop-tools GOFLAGS=-buildvcs=false \
        go install "github.com/mccutchen/go-httpbin/v2/cmd/go-httpbin@$GO_HTTPBIN_VERSION"
    echo "$GO_HTTPBIN_VERSION" > "$HTTPBIN.version"
fi
if [[ -z ${LOADLAB:-} ]]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=$ROOT/target/release/loadlab
fi
OUT=${INTEROP_OUT:-$ROOT/bench/out/interop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# Apache's children run as www-data and read the documents from here.
chmod 755 "$OUT"
CERTS=$OUT/certs
DOCROOT=$OUT/docroot
# Set by each server's start function: its ports, its paths where they differ from the common
# layout, what it does not offer (and why), what it answers a TLS client without the client
# certificate it requires when that is not a refused handshake, what its gzip body holds, and
# how long to wait for its count (in 50 ms steps) when it logs late, and what its POST with
# `Expect: 100-continue` must look like (see expect_cell).
declare -A PORT PATHS NOPE NO_CERT_ANSWER GZIP_TEXT POLL_STEPS EXPECT_100
PIDS=()

stop_all() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

started() { PIDS+=("$2"); echo "$2" > "$OUT/$1.pid"; }

# take_ports SERVER NAME...: a free loopback port for each NAME (tls_all: one per TLS variant
# and mtls), as PORT[SERVER:NAME]. All are held open together so none is handed out twice.
take_ports() {
    local server=$1 names=() n ports
    shift
    for n in "$@"; do
        if [[ $n == tls_all ]]; then
            for v in $TLS_VARIANTS mtls; do names+=("tls:$v"); done
        else
            names+=("$n")
        fi
    done
    read -r -a ports < <(python3 -c '
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "${#names[@]}")
    for i in "${!names[@]}"; do PORT[$server:${names[$i]}]=${ports[$i]}; done
}

wait_http() { # server url
    for _ in $(seq 100); do
        curl -sk -o /dev/null "$2" && return 0
        sleep 0.1
    done
    echo "interop: $1 did not answer at $2; see $OUT/$1/" >&2
    return 1
}

line_count() { if [[ -f $1 ]]; then wc -l < "$1"; else echo 0; fi; }

make_docroot() {
    mkdir -p "$DOCROOT"
    : > "$DOCROOT/0b"
    python3 - "$DOCROOT" <<'PY'
import sys
line = b"loadlab interop: a compressible line of text for every server.\n"  # 64 bytes
open(sys.argv[1] + "/1k", "wb").write(line * 16)
open(sys.argv[1] + "/1m", "wb").write(line * 16384)
PY
    chmod 644 "$DOCROOT"/*
}

source bench/interop/certs.sh
source bench/interop/nginx.sh
source bench/interop/apache.sh
source bench/interop/haproxy.sh
source bench/interop/lighttpd.sh
source bench/interop/h2o.sh
source bench/interop/httpbin.sh
source bench/interop/caddy.sh
source bench/interop/cells.sh
source bench/interop/matrix.sh

declare -A BINARY=([apache]=apache2 [haproxy-proxy]=haproxy [httpbin]=$HTTPBIN)
make_docroot
make_certs
: > "$OUT/cells.tsv"
if [[ $FAST == 1 ]]; then
    SERVERS="nginx apache httpbin"
    # HAProxy answers before the body: the fast subset has its expect-100 cell when it is here.
    command -v haproxy >/dev/null && SERVERS+=" haproxy"
    # Caddy (when installed): HTTP/3, closed and open loop, 100 streams.
    command -v caddy >/dev/null && SERVERS+=" caddy"
else
    SERVERS=${SERVERS:-"nginx apache haproxy haproxy-proxy lighttpd h2o httpbin caddy"}
fi
for server in $SERVERS; do
    fn=start_${server//-/_}
    if ! command -v "${BINARY[$server]:-$server}" >/dev/null; then
        record "$server" "(server)" "not installed" "install it (the full matrix does, as root)"
        continue
    fi
    if ! "$fn"; then
        record "$server" "(server)" FAIL "did not start: see $OUT/$server/"
        continue
    fi
    if [[ $FAST == 1 ]]; then fast_cells "$server"; else all_cells "$server"; fi
done
stop_all
trap - EXIT
wall_s=$(( $(date +%s) - START_S ))
python3 bench/interop/table.py "$OUT/cells.tsv" "$wall_s" | tee "$OUT/table.txt"
! grep -q $'\tFAIL\t' "$OUT/cells.tsv"
