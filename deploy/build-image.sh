#!/usr/bin/env bash
# Builds the FROM scratch image of deploy/Containerfile.static with podman (or docker):
# the static binary from scripts/build-static.sh and the host's CA roots, nothing else.
#
#   bash deploy/build-image.sh [TAG]      # default localhost/loadlab:static
#
# Needs podman (Debian: apt-get install podman) or docker; pulls nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/loadlab:static}
engine=${CONTAINER_ENGINE:-$(command -v podman || command -v docker || true)}
if [[ -z $engine ]]; then
    echo "build-image: neither podman nor docker is installed; install one" \
        "(Debian: apt-get install podman) or set CONTAINER_ENGINE" >&2
    exit 2
fi
roots=${CA_ROOTS:-/etc/ssl/certs/ca-certificates.crt}
if [[ ! -s $roots ]]; then
    echo "build-image: no CA roots at $roots; install ca-certificates or set CA_ROOTS=FILE" >&2
    exit 2
fi
binary=$(bash scripts/build-static.sh | tail -n 1)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$binary" "$context/loadlab"
cp "$roots" "$context/ca-certificates.crt"
"$engine" build --pull=never -f deploy/Containerfile.static -t "$tag" "$context"
echo "build-image: $tag ($("$engine" image inspect --format '{{.Size}}' "$tag") bytes)"
