#!/usr/bin/env bash
# Installs what loadlab's tests need, then runs them all: formatting, lints, the test suite,
# and the README's first command. CI runs exactly this (via .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== README: the first command (portfolio-migration), shortened: 2 runs per arm of 2 s"
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

echo "== README: loadlab demo"
cargo run --release --locked -q -p loadlab-cli -- demo -d 1s -c 20 >/dev/null
echo "demo ran"
