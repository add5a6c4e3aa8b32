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

echo "== README: loadlab demo"
cargo run --release --locked -q -p loadlab-cli -- demo -d 1s -c 20 >/dev/null
echo "demo ran"
