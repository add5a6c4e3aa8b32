#!/usr/bin/env bash
# Installs what loadlab's tests need, then runs them all: formatting, lints, the test suite,
# and the README's first command. CI runs exactly this (via .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's elapsed time, so a slow CI run says where its minutes went.
step() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

bash scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
# Every test binary runs even after one fails, so a failure never hides the others' results.
cargo test --workspace --locked --no-fail-fast

step "README: the first command (portfolio-migration), shortened: 2 runs per arm of 2 s"
ci_tmp=$(mktemp -d)
limits=strict
[ "$(id -u)" -eq 0 ] || limits=best-effort
cargo run --release --locked -q -p loadlab-cli -- experiment scenarios/portfolio-migration.toml \
    --repetitions 2 --duration 2s --warmup 1s --limits "$limits" \
    --db "$ci_tmp/ci.db" --report "$ci_tmp/portfolio.html" > "$ci_tmp/table.txt"
grep -q "axum against portfolio-migration:actix-web" "$ci_tmp/table.txt"
grep -q "inconclusive" "$ci_tmp/table.txt"
test -s "$ci_tmp/portfolio.html"
[ "$(cargo run --release --locked -q -p loadlab-cli -- runs list --db "$ci_tmp/ci.db" | grep -c " experiment ")" -eq 4 ]
rm -rf "$ci_tmp"
echo "portfolio-migration ran: 4 runs stored, compared, reported"

step "README: loadlab demo"
cargo run --release --locked -q -p loadlab-cli -- demo -d 1s -c 20 >/dev/null
echo "demo ran"

step "install: scripts/install.sh into a temporary root, then loadlab from there"
install_root=$(mktemp -d)
bash scripts/install.sh --root "$install_root" --target-dir target >/dev/null
(
    export PATH="$install_root/bin:$PATH"
    [ "$(command -v loadlab)" = "$install_root/bin/loadlab" ]
    loadlab --version
    loadlab demo -d 1s -c 20 >/dev/null
    bash -c 'set -e; source "$1"; complete -p loadlab >/dev/null' bash \
        "$install_root/share/bash-completion/completions/loadlab"
    if command -v man >/dev/null; then
        [ "$(man -w loadlab-run)" = "$install_root/share/man/man1/loadlab-run.1" ]
    fi
)
rm -rf "$install_root"
echo "installed: loadlab --version, demo, bash completion and man loadlab-run from the install root"
step "done"
