#!/bin/sh
# `loadlab lab build erlang-cowboy` (see target.toml): Cowboy, Ranch, Cowlib and jsx come from
# Debian's own build of them, the compiled applications Debian's rabbitmq-server package ships
# under plugins/. The package is downloaded (`apt-get download`, no root needed) and unpacked
# with `dpkg -x` into build/: it is never installed, and RabbitMQ never runs. Then erlc compiles
# src/ into build/ebin. Run in this directory; everything it makes is under build/.
set -eu

# The pins: the package's upstream version, and each application's version in it.
RABBITMQ_VERSION=3.10.8
APPS="cowboy-2.8.0 ranch-2.1.0 cowlib-2.9.1 jsx-3.1.0"

fail() {
    echo "erlang-cowboy build: $*" >&2
    exit 1
}

mkdir -p build/deb
# A downloaded package of the pinned version is kept: a rebuild of the sources needs no network.
deb=$(ls build/deb/rabbitmq-server_"$RABBITMQ_VERSION"-*_all.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
    rm -f build/deb/*.deb
    (cd build/deb && apt-get download "rabbitmq-server" >&2) ||
        fail "apt-get download rabbitmq-server failed: run 'apt-get update' (as root) so apt knows Debian bookworm's rabbitmq-server $RABBITMQ_VERSION, then build again"
    deb=$(ls build/deb/rabbitmq-server_*_all.deb | head -n 1)
fi
version=$(dpkg-deb -f "$deb" Version)
case "$version" in
"$RABBITMQ_VERSION"-*) ;;
*) fail "apt-get download gave rabbitmq-server $version, not $RABBITMQ_VERSION (Debian bookworm's, which carries Cowboy 2.8.0): point apt at bookworm, or update the pins in build.sh after checking the new versions" ;;
esac

rm -rf build/unpacked build/lib build/ebin
dpkg -x "$deb" build/unpacked || fail "dpkg -x $deb failed: is the download complete? delete build/deb and build again"
plugins=$(ls -d build/unpacked/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins | head -n 1)
[ -d "$plugins" ] || fail "no plugins/ directory in $deb: the package's layout changed; update build.sh"
mkdir -p build/lib build/ebin
for app in $APPS; do
    [ -f "$plugins/$app/ebin/${app%-*}.app" ] ||
        fail "$deb has no $app (found: $(ls "$plugins" | grep -E '^(cowboy|ranch|cowlib|jsx)-' | tr '\n' ' ')): update the pins in build.sh"
    cp -R "$plugins/$app" build/lib/
done
rm -rf build/unpacked

# The libraries on the code path so erlc checks the Cowboy behaviours the modules declare.
erlc -Werror $(for app in $APPS; do printf -- "-pa build/lib/%s/ebin " "$app"; done) -o build/ebin src/*.erl

{
    echo "rabbitmq-server $version (Debian package, unpacked only)"
    for app in $APPS; do echo "$app"; done
    echo "erlang/otp $(erl -noshell -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')"
} >build/VERSIONS
cat build/VERSIONS >&2
