#!/usr/bin/env bash
# Issue 46 items 4 and 6, measured: how long `loadlab import` takes and how much memory it
# holds on inputs whose names repeat or whose entries number 100,000, and how much memory a
# run of a scenario of thousands of steps holds. Inputs are written by bench/import-scale.py;
# every figure is /usr/bin/time -v's (wall clock, maximum resident set size). The runs go to
# `loadlab upstream` on loopback (one thread), bounded by -n.
#
#   bash bench/import-scale.sh                   # builds target/release/loadlab
#   LOADLAB=path bash bench/import-scale.sh      # that binary instead of a build
#   LOADLAB_BEFORE=path bash bench/import-scale.sh   # a second binary (say, built from an
#                                                # earlier commit) measured alike, "before"
#
# An import stopped at TIMEOUT seconds (default 120) reads "> TIMEOUT". The "before"
# binary's runs stop at STEPS_BEFORE_MAX steps (default 2,000): before issue 46 each step
# held about 1 MB in every worker thread, and 20,000 steps took 21 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out/import-scale
TIMEOUT=${TIMEOUT:-120}
STEPS_BEFORE_MAX=${STEPS_BEFORE_MAX:-2000}
mkdir -p "$OUT"
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release --locked -q -p loadlab-cli
    LOADLAB=target/release/loadlab
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LOADLAB" upstream --port "$PORT" --threads 1 >"$OUT/upstream.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
    sleep 0.1
done
python3 bench/import-scale.py "$OUT/in" "http://127.0.0.1:$PORT"

# One measured command: a table row "label what seconds max-RSS outcome".
measure() { # label what outcome-file command...
    local label=$1 what=$2 outcome=$3
    shift 3
    set +e
    timeout "$TIMEOUT" /usr/bin/time -v -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt"
    local rc=$?
    set -e
    if [ "$rc" -eq 124 ]; then
        printf '%-7s %-44s %10s %12s  %s\n' "$label" "$what" "> $TIMEOUT" "-" "stopped"
        return
    fi
    python3 - "$OUT/time.txt" "$label" "$what" "$rc" "$outcome" <<'PY'
import re, sys
time_file, label, what, rc, outcome = sys.argv[1:]
text = open(time_file).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
secs = 0.0
for part in wall.split(":"):
    secs = secs * 60 + float(part)
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
note = open(outcome).read().strip().splitlines() if outcome != "-" else []
note = note[-1] if note else ""
print(f"{label:<7} {what:<44} {secs:>10.2f} {rss_kb / 1024:>9.0f} MB  exit {rc}; {note[:90]}")
PY
}

import_one() { # label binary kind file
    local label=$1 bin=$2 kind=$3 file=$4
    measure "$label" "import $kind $file" "$OUT/stderr.txt" \
        "$bin" import "$kind" "$OUT/in/$file" -o "$OUT/imported-$label-$file.toml"
    # Whether the scenario it wrote would run: the loader's word is on standard error.
    if grep -q "refuses the file" "$OUT/stderr.txt"; then
        echo "        (loader: $(grep -o 'refuses the file as it is: .*' "$OUT/stderr.txt" | cut -c1-150))"
    fi
}

run_one() { # label binary steps requests
    local label=$1 bin=$2 steps=$3 n=$4
    measure "$label" "run $steps steps, -c 2 -n $n" "$OUT/stderr.txt" \
        "$bin" run --scenario "$OUT/in/steps-$steps.toml" -c 2 -n "$n" -q --no-pm-qos \
        --json "$OUT/run-$label-$steps-$n.json"
}

BINS=("after:$LOADLAB")
if [ -n "${LOADLAB_BEFORE:-}" ]; then BINS=("before:$LOADLAB_BEFORE" "${BINS[@]}"); fi

printf '%-7s %-44s %10s %12s  %s\n' "binary" "input" "seconds" "max RSS" "outcome"
for spec in "${BINS[@]}"; do
    label=${spec%%:*} bin=${spec#*:}
    import_one "$label" "$bin" har har-same-url-4000.har
    import_one "$label" "$bin" postman postman-same-name-5000.json
    import_one "$label" "$bin" har har-distinct-100000.har
    import_one "$label" "$bin" har har-chained-20000.har
    import_one "$label" "$bin" har har-chained-100000.har
done
for spec in "${BINS[@]}"; do
    label=${spec%%:*} bin=${spec#*:}
    for steps in 1000 2000 20000; do
        if [ "$label" = before ] && [ "$steps" -gt "$STEPS_BEFORE_MAX" ]; then
            printf '%-7s %-44s %10s %12s  %s\n' "$label" "run $steps steps" "-" "-" \
                "not run (STEPS_BEFORE_MAX=$STEPS_BEFORE_MAX)"
            continue
        fi
        # -n 1000 reaches the first steps only; -n twice the steps, every step of both
        # virtual users.
        run_one "$label" "$bin" "$steps" 1000
        run_one "$label" "$bin" "$steps" $((2 * steps))
    done
done
