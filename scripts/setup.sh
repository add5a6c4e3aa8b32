#!/usr/bin/env bash
# Checks and installs what building and testing loadlab needs. Idempotent; safe to re-run.
# Everything comes from the package registries (crates.io via cargo, Debian via apt-get);
# nothing is downloaded from anywhere else.
set -euo pipefail

need() { command -v "$1" >/dev/null 2>&1; }

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
