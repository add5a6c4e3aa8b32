#!/usr/bin/env bash
# Checks and installs what building and testing loadlab needs. Idempotent; safe to re-run.
# Everything comes from the package registries (crates.io via cargo, Debian via apt-get);
# nothing is downloaded from anywhere else.
#
#   bash scripts/setup.sh           # everything the full suite uses (apt-get needs root)
#   bash scripts/setup.sh --rust    # cargo, rustfmt and clippy only (scripts/test.sh --quick)
#   bash scripts/setup.sh --system  # cargo's components and Debian's packages only
#   bash scripts/setup.sh --tools   # only the pinned tools from PyPI, crates.io and Go's proxy,
#                                   # under target/ (scripts/test.sh runs this beside the build)
set -euo pipefail

mode=${1:-all}
case $mode in
    all | --rust | --system | --tools) ;;
    *)
        echo "setup: unknown argument '$mode'; use --rust, --system, --tools, or nothing" >&2
        exit 2
        ;;
esac

need() { command -v "$1" >/dev/null 2>&1; }

# The system part (skipped with --tools): cargo's components, then Debian's packages.
if [[ $mode != --tools ]]; then
if ! need cargo; then
    echo "setup: cargo is missing. Install Rust (https://rustup.rs) and re-run." >&2
    exit 2
fi
for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
        echo "setup: installing the $component component"
        rustup component add "$component"
    fi
done
echo "setup: $(cargo --version), rustfmt and clippy present"
if [[ $mode == --rust ]]; then exit 0; fi

# Debian's packages come first, gathered so that apt runs once: each check below adds what is
# missing to one list, then one `apt-get update` and one `apt-get install` take them all (eight
# updates, one per tool, took minutes of every cold CI run). Without root or apt-get we say
# what to install and go on; each test whose tool is missing prints SKIPPED and passes.
can_apt=false
if [[ $(id -u) -eq 0 ]] && need apt-get; then can_apt=true; fi
apt_packages=()
# wants "WHAT NEEDS THEM" PACKAGE...: the packages are missing; say so, and install them below.
wants() {
    local what=$1
    shift
    apt_packages+=("$@")
    if $can_apt; then
        echo "setup: will install $* (for $what)"
    else
        echo "setup: missing Debian packages $*: $what will be skipped" >&2
    fi
}

# The HTML report's browser test (crates/loadlab-report/tests/browser.rs) drives Debian's
# headless Chromium through chromedriver.
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then
    echo "setup: chromium and chromedriver present"
else
    wants "the HTML report's browser test" chromium chromium-driver
fi

# Bandwidth caps (--bandwidth) shape a veth link with iproute2's ip and tc; their tests
# (crates/loadlab-cli/tests/machine.rs) print SKIPPED without them or without root.
if need ip && need tc; then
    echo "setup: iproute2 (ip, tc) present"
else
    wants "the bandwidth tests" iproute2
fi

# The lab's erlang-cowboy target (targets/erlang-cowboy, crates/loadlab-lab/tests/it) needs
# Erlang/OTP from Debian: erlc and erl (erlang-base), ssl for HTTPS and inets for its httpc
# upstream client (crypto, public_key and asn1 come with them). Its build fetches Cowboy from
# Debian's rabbitmq-server package with `apt-get download`, which needs an updated package
# index (the one update below); RabbitMQ itself is never installed.
if need erlc && erl -noshell -eval 'application:load(ssl) =:= ok andalso application:load(inets) =:= ok orelse halt(1), halt().' >/dev/null 2>&1; then
    echo "setup: Erlang/OTP (erl, erlc, ssl, inets) present"
else
    wants "the lab's erlang-cowboy tests" erlang-base erlang-ssl erlang-inets
fi
index_stale=false
if need apt-get && ! apt-cache show rabbitmq-server >/dev/null 2>&1; then
    index_stale=true
    echo "setup: apt knows no rabbitmq-server package (erlang-cowboy's build downloads it)"
fi

# Shipping (crates/loadlab-cli/tests/ship.rs): the man pages are rendered with groff and man;
# the FROM scratch image (deploy/Containerfile.static) is built and run with Debian's rootful
# podman and runc (catatonit: the pause process of the pods `podman kube play` makes).
if need groff && need man; then
    echo "setup: groff and man present"
else
    wants "the man pages' rendering test" groff-base man-db
fi
if need podman && need runc && need catatonit; then
    echo "setup: podman, runc and catatonit present"
else
    wants "the container image's tests" podman runc catatonit
fi

# The interop test (crates/loadlab-cli/tests/interop.rs) and `bench/interop.sh` run loadlab
# against Debian's nginx, Apache httpd, HAProxy (its expect-100 cell) and Caddy (HTTP/3), and
# go-httpbin (below). The full matrix installs its other servers (lighttpd, h2o) itself.
if need nginx && need apache2 && need haproxy && need caddy && need openssl && need curl \
    && [[ -f /usr/lib/nginx/modules/ngx_http_brotli_filter_module.so ]]; then
    echo "setup: nginx, apache2, haproxy, caddy, openssl and curl present"
else
    wants "the interop test" nginx libnginx-mod-http-brotli-filter apache2 haproxy caddy \
        openssl curl
fi

# The WebSocket interop test (crates/loadlab-cli/tests/it/websocket.rs) loads Debian's
# websocketd (a shell loop echoing and counting lines behind it).
if need websocketd; then
    echo "setup: websocketd present"
else
    wants "the WebSocket interop test" websocketd
fi

# Prometheus both ways (crates/loadlab-metrics/tests/prometheus.rs): Debian's prometheus
# (remote-write receiver) and prometheus-node-exporter; the scraped app's prometheus_client
# comes from PyPI (below).
if need prometheus && need prometheus-node-exporter; then
    echo "setup: prometheus and prometheus-node-exporter present"
else
    wants "the Prometheus tests" prometheus prometheus-node-exporter
fi

if [[ ${#apt_packages[@]} -gt 0 ]] || $index_stale; then
    if $can_apt; then
        echo "setup: apt-get update (once)"
        apt-get update -qq
        if [[ ${#apt_packages[@]} -gt 0 ]]; then
            echo "setup: apt-get install ${apt_packages[*]}"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${apt_packages[@]}"
            # Debian's caddy starts a service on port 80 where systemd runs (a CI runner):
            # the tests start their own Caddy, on ports of their own.
            if [[ " ${apt_packages[*]} " == *" caddy "* ]] && need systemctl \
                && systemctl is-active --quiet caddy 2>/dev/null; then
                systemctl disable --now caddy
            fi
        fi
    else
        echo "setup: not root, or no apt-get; to run every test, as root:" \
            "apt-get update${apt_packages[*]:+ && apt-get install ${apt_packages[*]}}" >&2
    fi
fi

fi # the system part
if [[ $mode == --system ]]; then exit 0; fi

# The rest comes from the language registries (crates.io, PyPI, the Go module proxy), pinned,
# into directories under target/ (nothing installed system-wide), so it is cached with the build.

# The Ansible playbook's end-to-end test (crates/loadlab-cli/tests/dist.rs) and
# `bench/shards-ansible.sh` run ansible-core, pinned, from PyPI into a virtualenv under
# target/ (nothing installed system-wide). Without python3's venv we say so and go on (that
# test then prints SKIPPED and passes).
ANSIBLE_CORE_VERSION=2.17.14
venv=target/ansible-venv
if [[ -x $venv/bin/ansible-playbook ]] \
    && "$venv/bin/python" -c "import ansible, sys; sys.exit(ansible.__version__ != '$ANSIBLE_CORE_VERSION')" 2>/dev/null; then
    echo "setup: ansible-core $ANSIBLE_CORE_VERSION present in $venv"
elif need python3 && python3 -m venv "$venv" >/dev/null 2>&1; then
    echo "setup: installing ansible-core $ANSIBLE_CORE_VERSION into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$ANSIBLE_CORE_VERSION"
else
    echo "setup: python3 with venv is missing; the Ansible playbook's test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi

# The change-point detector's comparison test (crates/loadlab-history/tests/history/python.rs)
# runs MongoDB's own E-Divisive, signal-processing-algorithms, pinned, from PyPI into a
# virtualenv under target/; without it that test prints SKIPPED and passes.
SIGNAL_PROCESSING_ALGORITHMS_VERSION=2.1.6
history_venv=target/history-venv
if [[ -x $history_venv/bin/python ]] \
    && "$history_venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('signal-processing-algorithms') != '$SIGNAL_PROCESSING_ALGORITHMS_VERSION')" 2>/dev/null; then
    echo "setup: signal-processing-algorithms $SIGNAL_PROCESSING_ALGORITHMS_VERSION present in $history_venv"
elif need python3 && python3 -m venv "$history_venv" >/dev/null 2>&1; then
    echo "setup: installing signal-processing-algorithms $SIGNAL_PROCESSING_ALGORITHMS_VERSION into $history_venv"
    "$history_venv/bin/pip" install -q --disable-pip-version-check \
        "signal-processing-algorithms==$SIGNAL_PROCESSING_ALGORITHMS_VERSION"
else
    echo "setup: python3 with venv is missing; the change-point comparison test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi

# The gRPC interop test (crates/loadlab-cli/tests/it/grpc.rs) loads grpcio's own Health
# service, pinned, from PyPI into a virtualenv under target/; without it that test prints
# SKIPPED and passes.
GRPCIO_VERSION=1.85.4
GRPCIO_HEALTH_VERSION=1.85.1
grpc_venv=target/grpc-venv
if [[ -x $grpc_venv/bin/python ]] \
    && "$grpc_venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('grpcio') != '$GRPCIO_VERSION' or m.version('grpcio-health-checking') != '$GRPCIO_HEALTH_VERSION')" 2>/dev/null; then
    echo "setup: grpcio $GRPCIO_VERSION present in $grpc_venv"
elif need python3 && python3 -m venv "$grpc_venv" >/dev/null 2>&1; then
    echo "setup: installing grpcio $GRPCIO_VERSION into $grpc_venv"
    "$grpc_venv/bin/pip" install -q --disable-pip-version-check \
        "grpcio==$GRPCIO_VERSION" "grpcio-health-checking==$GRPCIO_HEALTH_VERSION"
else
    echo "setup: python3 with venv is missing; the gRPC interop test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi

# The WebSocket interop test (crates/loadlab-cli/tests/it/websocket.rs) loads Python's
# websockets (tests/ws/echo_server.py), pinned, from PyPI into a virtualenv under target/;
# without it that test prints SKIPPED and passes.
WEBSOCKETS_VERSION=17.4
ws_venv=target/ws-venv
if [[ -x $ws_venv/bin/python ]] \
    && "$ws_venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('websockets') != '$WEBSOCKETS_VERSION')" 2>/dev/null; then
    echo "setup: websockets $WEBSOCKETS_VERSION present in $ws_venv"
elif need python3 && python3 -m venv "$ws_venv" >/dev/null 2>&1; then
    echo "setup: installing websockets $WEBSOCKETS_VERSION into $ws_venv"
    "$ws_venv/bin/pip" install -q --disable-pip-version-check "websockets==$WEBSOCKETS_VERSION"
else
    echo "setup: python3 with venv is missing; the WebSocket interop test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi

# The book (docs/, an mdBook) is built by ship.rs's book test, which follows every link of
# the built pages. mdbook is not packaged for Debian 12: cargo builds it from crates.io, pinned,
# without its serve/watch/search features (the test needs none) and unoptimised (half the
# compile; the book is small), into target/book-tools.
MDBOOK_VERSION=0.5.4
if [[ -x target/book-tools/bin/mdbook ]] \
    && [[ $(target/book-tools/bin/mdbook --version 2>/dev/null) == *"v$MDBOOK_VERSION"* ]]; then
    echo "setup: mdbook $MDBOOK_VERSION present in target/book-tools"
else
    echo "setup: building mdbook $MDBOOK_VERSION into target/book-tools (for the book's test)"
    cargo install -q --locked --debug mdbook --version "$MDBOOK_VERSION" --no-default-features \
        --root target/book-tools
fi
# The Kubernetes manifests' test (ship.rs) checks them with kubernetes-validate, pinned, from
# PyPI into a virtualenv under target/.
KUBERNETES_VALIDATE_VERSION=1.37.0
k8s_venv=target/k8s-venv
if [[ -x $k8s_venv/bin/kubernetes-validate ]] \
    && [[ $("$k8s_venv/bin/kubernetes-validate" --version 2>/dev/null) == *"$KUBERNETES_VALIDATE_VERSION"* ]]; then
    echo "setup: kubernetes-validate $KUBERNETES_VALIDATE_VERSION present in $k8s_venv"
elif need python3 && python3 -m venv "$k8s_venv" >/dev/null 2>&1; then
    echo "setup: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $k8s_venv"
    "$k8s_venv/bin/pip" install -q --disable-pip-version-check \
        "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
else
    echo "setup: python3 with venv is missing; the Kubernetes manifests' test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi

# go-httpbin for the interop test (above), built from the Go module proxy at a pinned version
# into target/interop-tools.
GO_HTTPBIN_VERSION=v2.26.0   # keep in step with bench/interop.sh
httpbin=target/interop-tools/go-httpbin
# (go-httpbin's -version says "dev" when built by go install: a stamp file keeps the version.)
if [[ -x $httpbin && $(cat "$httpbin.version" 2>/dev/null) == "$GO_HTTPBIN_VERSION" ]]; then
    echo "setup: go-httpbin $GO_HTTPBIN_VERSION present in target/interop-tools"
elif need go; then
    echo "setup: building go-httpbin $GO_HTTPBIN_VERSION into target/interop-tools"
    GOBIN=$PWD/target/interop-tools GOFLAGS=-buildvcs=false \
        go install "github.com/mccutchen/go-httpbin/v2/cmd/go-httpbin@$GO_HTTPBIN_VERSION"
    echo "$GO_HTTPBIN_VERSION" > "$httpbin.version"
else
    echo "setup: go is missing, so go-httpbin cannot be built; the interop test will be" \
        "skipped. Install Go (Debian: sudo apt-get install golang-go) and re-run" >&2
fi

# The scraped app of the Prometheus tests (above): the Python prometheus_client, pinned, from
# PyPI into a virtualenv under target/.
PROMETHEUS_CLIENT_VERSION=0.26.0
venv=target/metrics-venv
if [[ -x $venv/bin/python ]] \
    && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('prometheus-client') != '$PROMETHEUS_CLIENT_VERSION')" 2>/dev/null; then
    echo "setup: prometheus-client $PROMETHEUS_CLIENT_VERSION present in $venv"
elif need python3 && python3 -m venv "$venv" >/dev/null 2>&1; then
    echo "setup: installing prometheus-client $PROMETHEUS_CLIENT_VERSION into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "prometheus-client==$PROMETHEUS_CLIENT_VERSION"
else
    echo "setup: python3 with venv is missing; the scraped-app test will be skipped." \
        "Install python3 and python3-venv, then re-run" >&2
fi
