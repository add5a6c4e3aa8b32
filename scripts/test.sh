#!/usr/bin/env bash
# Installs what loadlab's tests need, then runs them all: formatting, lints, the test suite,
# and the README's first commands. CI runs exactly this (via .ci/run).
#
#   bash scripts/test.sh           # every check, as CI runs them
#   bash scripts/test.sh --quick   # the inner loop: formatting, unit tests and in-process tests
#
# --quick installs nothing and runs no external server or tool (nginx, Prometheus, a browser,
# podman, ansible), no lab build, and no test that needs namespaces or the machine to itself;
# see `quick_tests` below. Before sending a change, run the full command.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
case "${1:-}" in
    "") ;;
    --quick) quick=true ;;
    *)
        echo "test: unknown argument '$1'; use --quick, or nothing for every check" >&2
        exit 2
        ;;
esac

# Each step's elapsed time, so a slow run says where its minutes went: printed as a step
# starts, and as a table when the script ends (a failed run's too).
step_keys=()
step_names=()
step_starts=()
step() {
    echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $2"
    step_keys+=("$1")
    step_names+=("$2")
    step_starts+=("$SECONDS")
}
step_table() {
    local i end
    echo "== step table (seconds)"
    for i in "${!step_keys[@]}"; do
        end=${step_starts[i + 1]:-$SECONDS}
        printf '%6d  %-8s %s\n' $((end - step_starts[i])) "${step_keys[i]}" "${step_names[i]}"
    done
    printf '%6d  total\n' "$SECONDS"
}
# A run that stops early still waits for the tools and the targets started beside the build
# (nothing of them is left running), then prints the table.
finish() {
    if [[ -n ${tools_pid:-} ]]; then wait "$tools_pid" 2>/dev/null || true; fi
    if [[ -n ${targets_pid:-} ]]; then wait "$targets_pid" 2>/dev/null || true; fi
    if [[ -n ${others_pid:-} ]]; then wait "$others_pid" 2>/dev/null || true; fi
    step_table
}
trap finish EXIT

# The quick set: every crate's unit tests, and the integration binaries whose tests share a
# process and run against servers on loopback that the tests start themselves; with the
# libtest arguments that leave out what needs a program scripts/setup.sh installs. Not here
# (CI runs them): loadlab-lab's `it` (builds the lab's targets), loadlab-agent's `it` (the
# servers it launches are python3's), loadlab-metrics' `prometheus` and loadlab-machine's
# `link`, and the binaries that keep to themselves because they need the machine or their
# process to themselves: engine `open_loop`, and cli `agent`, `capacity`, `cliff`,
# `machine`, `metrics_everywhere`, `server`, `session`, `ship` and `spill`.
quick_tests=(
    # package          target          libtest arguments
    "loadlab-certs      openssl_cacert"
    "loadlab-cli        it              --skip interop:: --skip metrics:: --skip dist::the_ansible_playbook --skip grpc::against_grpcio"
    "loadlab-compare    it"
    "loadlab-engine     it"
    "loadlab-experiment it"
    "loadlab-import     it"
    "loadlab-report     it              --skip browser::"
    "loadlab-result     it"
    "loadlab-store      store"
    "loadlab-upstream   it"
)

# Builds the quick set's test binaries (with the workspace's features, as the full suite
# does, so the two share every artifact); cargo's list of them kept for run_quick_tests.
quick_artifacts=
build_quick_tests() {
    quick_artifacts=$(cargo test --workspace --locked --no-run --lib --bins \
        --test it --test store --test openssl_cacert --message-format=json-render-diagnostics)
}

# Runs the quick set: every binary runs even after one fails.
run_quick_tests() {
    local kind target dir exe e entry words args failed=() ran=()
    local runner=$PWD/scripts/test-runner.sh
    # Each test executable as "KIND TARGET PACKAGE_DIR EXECUTABLE".
    while read -r kind target dir exe; do
        args=()
        if [[ $kind == test ]]; then
            entry=
            for e in "${quick_tests[@]}"; do
                read -r -a words <<< "$e"
                if [[ ${words[0]} == "${dir##*/}" && ${words[1]} == "$target" ]]; then
                    entry=$e
                    args=("${words[@]:2}")
                fi
            done
            if [[ -z $entry ]]; then
                echo "     Leaving ${dir##*/} $target to the full run"
                continue
            fi
        fi
        echo "     Running ${dir##*/} $target ($exe${args[*]:+ ${args[*]}})"
        ran+=("${dir##*/} $target")
        # cargo runs a test binary in its package's directory; so does this.
        # Through the full run's runner, so that it gets the same test threads.
        (cd "$dir" && CARGO_PKG_NAME=${dir##*/} "$runner" "$exe" "${args[@]}") \
            || failed+=("${dir##*/} $target")
    done < <(grep '"reason":"compiler-artifact"' <<< "$quick_artifacts" \
        | grep '"profile":{[^}]*"test":true' | grep '"executable":"/' \
        | sed -E 's/.*"manifest_path":"([^"]*)\/Cargo.toml".*"target":\{"kind":\["([a-z-]+)"\],"crate_types":\[[^]]*\],"name":"([^"]+)".*"executable":"([^"]*)".*/\2 \3 \1 \4/' \
        | sort -k3,3 -k1,1 -k2,2)
    # A quick_tests entry that matches no binary (renamed, moved) would be dropped in silence.
    for e in "${quick_tests[@]}"; do
        read -r -a words <<< "$e"
        if [[ " ${ran[*]/%/,} " != *" ${words[0]} ${words[1]}, "* ]]; then
            failed+=("${words[0]} ${words[1]} (no such test binary was built)")
        fi
    done
    if [[ ${#failed[@]} -gt 0 ]]; then
        printf 'test: failed: %s\n' "${failed[@]}" >&2
        return 1
    fi
}

if $quick; then
    planned=(setup fmt build test)
    step setup "scripts/setup.sh --rust (cargo, rustfmt, clippy; nothing installed)"
    bash scripts/setup.sh --rust

    step fmt "cargo fmt --check"
    cargo fmt --all -- --check

    step build "cargo test --no-run (the quick set's binaries)"
    build_quick_tests

    step test "unit tests and in-process tests (the quick set)"
    run_quick_tests
else
    planned=(setup fmt build tools test binary readme demo install)
    step setup "scripts/setup.sh --system (cargo's components, Debian's packages)"
    bash scripts/setup.sh --system
    # The pinned tools from PyPI, crates.io and Go's proxy (virtualenvs, mdbook, go-httpbin)
    # are fetched and built beside the compile below, whose waits for the disk and the linker
    # their downloads fill; the tests start once both are done. Started before the compile's
    # variables are set: mdbook's build is not linted as loadlab's.
    tools_log=$(mktemp)
    bash scripts/setup.sh --tools > "$tools_log" 2>&1 &
    tools_pid=$!
    # The lab's Rust targets (one cargo workspace, release) are built beside the compile too,
    # at the lowest priority, so that they take only the cores the compile leaves idle (its
    # waits for the linker and its single-crate stretches); the lab tests' own `lab build`
    # then finds them up to date. It was the first lab test's two to three minutes of a cold
    # run. Its environment is what `lab build` gives a target (no CARGO_TARGET_DIR, no rustc
    # wrapper), so the two builds agree and cargo does not compile the targets twice.
    targets_log=$(mktemp)
    (cd targets && env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR \
        nice -n 19 cargo build --release --locked --workspace) > "$targets_log" 2>&1 &
    targets_pid=$!

    step fmt "cargo fmt --check"
    cargo fmt --all -- --check

    # The lints and the build in one compile: the workspace's crates are compiled by
    # clippy-driver (rustc with clippy's lints, as `cargo clippy` runs it, -D warnings), so the
    # dependencies are compiled once instead of twice (`cargo clippy` type-checks all of them
    # again in a mode of its own: minutes of a cold run). `cargo test` builds every target
    # `cargo clippy --all-targets` checks (lib, bins, tests, the example). The two variables
    # stay set for the steps below, which would otherwise compile the workspace again;
    # `loadlab lab build` does not pass them on to a target's build.
    clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)
    if [[ -z $clippy_driver ]]; then
        echo "test: clippy-driver is missing (rustup component add clippy)" >&2
        exit 1
    fi
    export RUSTC_WORKSPACE_WRAPPER=$clippy_driver
    export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    # Built first, on its own, so that the table tells compiling from running.
    step build "cargo test --no-run, linted by clippy as it compiles (-D warnings)"
    cargo test --workspace --locked --no-run

    step tools "scripts/setup.sh --tools and the lab's Rust targets (started with the build): waited for"
    tools_status=0
    wait "$tools_pid" || tools_status=$?
    tools_pid=
    cat "$tools_log"
    rm -f "$tools_log"
    if [[ $tools_status -ne 0 ]]; then
        echo "test: scripts/setup.sh --tools failed (exit $tools_status): see its lines above" >&2
        exit 1
    fi
    targets_status=0
    wait "$targets_pid" || targets_status=$?
    targets_pid=
    tail -n 3 "$targets_log"
    # A failure here is the lab tests' to report (their `lab build` runs the same command and
    # shows its output); this only says so early.
    if [[ $targets_status -ne 0 ]]; then
        echo "test: the lab's Rust targets did not build (exit $targets_status); the lab tests will say why:" >&2
        tail -n 30 "$targets_log" >&2
    fi
    rm -f "$targets_log"

    # The lab's other targets (Java and Kotlin by Maven, Go, Erlang, Node, Python) are built
    # from now on, by the loadlab just compiled, under SCHED_IDLE: on a CPU only when nothing
    # else wants it, so in the first test binaries' waits on sockets and clocks, never in a
    # measuring test's way (a task of the normal class preempts it at once). Their downloads
    # and JVMs were the lab tests' first minutes of a cold run; built before the tests, they
    # lengthened the tools' step by as much as they saved there (118 s waited for; 53 s
    # beside the Rust targets' build, which they slowed): the cores are busy until the tests
    # begin. Per-target locks in `lab build` make the lab tests, which come later, wait for a
    # target still building rather than build it twice; a target whose toolchain is missing
    # or whose build fails is theirs to report (they build every target again, and say why).
    idle=(nice -n 19)
    if chrt --idle 0 true 2>/dev/null; then idle=(chrt --idle 0); fi
    others_log=$(mktemp)
    (
        for manifest in targets/*/target.toml; do
            name=${manifest#targets/}
            name=${name%/target.toml}
            [[ $name == rust-* ]] && continue
            "${idle[@]}" target/debug/loadlab lab build "$name" || echo "lab build $name: exit $?"
        done
    ) > "$others_log" 2>&1 &
    others_pid=$!

    step test "cargo test"
    # Every test binary runs even after one fails, so a failure never hides the others' results.
    # Each runs through scripts/test-runner.sh, which gives the binaries whose tests mostly wait
    # (engine's `it`, session's unit tests) more test threads than cores: about 30 s
    # less of this step (it says which binaries, and their timings). A runner, not a second
    # `cargo test`: --exclude is per package, and one invocation keeps one failure summary.
    cargo test --workspace --locked --no-fail-fast \
        --config "target.'cfg(all())'.runner='$PWD/scripts/test-runner.sh'"
    # The other targets' builds ended before the lab tests used them (those waited on their
    # locks); a failed one is named (the lab tests said why).
    wait "$others_pid" || true
    others_pid=
    grep -E '^lab build .*: exit' "$others_log" || true
    rm -f "$others_log"

    # The smoke steps run the loadlab the tests ran (a debug build whose engine is optimised;
    # see the dev profile in Cargo.toml) rather than a release build of their own: that was a
    # second full build, with LTO and one codegen unit, for a few seconds of use. Not `cargo
    # build -p loadlab-cli`: without the tests' dev-dependencies its features differ, and it
    # would compile the workspace again. This command is a no-op after the step above.
    step binary "the loadlab the tests built (target/debug/loadlab)"
    cargo test --workspace --locked --no-run -q
    loadlab=$PWD/target/debug/loadlab
    "$loadlab" --version

    step readme "README: the first command (portfolio-migration), shortened: 2 runs per arm of 2 s"
    ci_tmp=$(mktemp -d)
    limits=strict
    [ "$(id -u)" -eq 0 ] || limits=best-effort
    # Its progress on stderr is shown and kept: the showcase must not warn against itself.
    "$loadlab" experiment scenarios/portfolio-migration.toml \
        --repetitions 2 --duration 2s --warmup 1s --limits "$limits" \
        --db "$ci_tmp/ci.db" --report "$ci_tmp/portfolio.html" 2>&1 > "$ci_tmp/table.txt" \
        | tee "$ci_tmp/progress.txt"
    grep -q "axum against portfolio-migration:actix-web" "$ci_tmp/table.txt"
    # With two CPUs or more each framework runs on one of its own, loadlab on the others
    # (issue 56); on one CPU they must share it, and the warning is then the truth.
    if [ "$(nproc)" -ge 2 ]; then
        grep -q "placement: the server on CPU .*, loadlab on CPU .* (apart by default" "$ci_tmp/progress.txt"
        if grep "cpu_sharing" "$ci_tmp/progress.txt"; then
            echo "the flagship warned cpu_sharing on $(nproc) CPUs" >&2
            exit 1
        fi
    fi
    grep -q "inconclusive" "$ci_tmp/table.txt"
    test -s "$ci_tmp/portfolio.html"
    [ "$("$loadlab" runs list --db "$ci_tmp/ci.db" | grep -c " experiment ")" -eq 4 ]
    rm -rf "$ci_tmp"
    echo "portfolio-migration ran: 4 runs stored, compared, reported"

    step demo "README: loadlab demo"
    "$loadlab" demo -d 1s -c 20 >/dev/null
    echo "demo ran"

    step install "install: scripts/install.sh into a temporary root, then loadlab from there"
    install_root=$(mktemp -d)
    bash scripts/install.sh --root "$install_root" --binary "$loadlab" >/dev/null
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
fi

# The step table (printed on exit) must hold every planned step, in order: a run that skipped
# one, or lost its timings, fails.
if [[ "${step_keys[*]}" != "${planned[*]}" ]]; then
    echo "test: the step table has '${step_keys[*]}', not every step of '${planned[*]}'" >&2
    exit 1
fi
echo "== all steps passed"
