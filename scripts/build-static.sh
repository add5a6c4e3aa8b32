#!/usr/bin/env bash
# Builds a statically linked Linux binary of loadlab: glibc linked in (`+crt-static` on the
# gnu target the toolchain already has), so it runs on a host with another C library, or with
# none (the FROM scratch image of deploy/Containerfile.static). Offline: no target or
# toolchain to download (the musl target would need one).
#
#   bash scripts/build-static.sh            # prints the binary's path on its last line:
#                                           # target/static/loadlab, stripped of symbols
#
# Its own target dir (target/static): the flags differ from the ordinary build's, so sharing
# one would rebuild everything each time either is built. `--target` is given explicitly so
# that the flag reaches only the program, not build scripts and proc-macros (which must stay
# dynamic). Caveat of static glibc: host names are resolved without NSS plugins (files and
# DNS through /etc/hosts and /etc/resolv.conf only); IP addresses always work.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
case "$host" in
    *-linux-gnu) ;;
    *)
        echo "build-static: the host target is $host; this script builds a static glibc" \
            "binary on a *-linux-gnu host only" >&2
        exit 2
        ;;
esac

RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release --locked -p loadlab-cli --bin loadlab \
    --target "$host" --target-dir target/static >&2

built=target/static/$host/release/loadlab
binary=target/static/loadlab
# Stripped (symbols and line tables): 19 MB instead of 85 MB, for hosts and images; the
# unstripped build stays beside it for backtraces with line numbers.
if command -v strip >/dev/null 2>&1; then
    strip -o "$binary" "$built"
else
    cp "$built" "$binary"
fi
if ldd "$binary" >/dev/null 2>&1 && ! ldd "$binary" 2>&1 | grep -q "statically linked"; then
    echo "build-static: $binary is still dynamically linked:" >&2
    ldd "$binary" >&2
    exit 1
fi
"$binary" --version >/dev/null
echo "build-static: $(du -h "$binary" | cut -f1) static binary ($built unstripped); it runs" >&2
echo "$binary"
