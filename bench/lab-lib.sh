# Shared by the lab's bench scripts (lab-table.sh, upstream-grpc.sh): sourced, not run.
# Expects OUT, with $OUT/targets.json written by `loadlab lab list --json`.

# A target's recommended warm-up in seconds, from its manifest (0 when it names none).
warmup_of() { python3 -c "
import json,sys; print(next((t['warmup_secs'] for t in json.load(open(sys.argv[1])) if t['name'] == sys.argv[2]), 0))" "$OUT/targets.json" "$1"; }

# Whether a target declares the upstream-grpc capability.
has_grpc() { python3 -c "
import json,sys; sys.exit(0 if any(t['name'] == sys.argv[2] and 'upstream-grpc' in t['capabilities'] for t in json.load(open(sys.argv[1]))) else 1)" "$OUT/targets.json" "$1"; }

# Waits (up to 60 s) for the first line of a background process's output that matches a
# pattern, and prints it; exits the script if none comes.
first_match() { # file pattern
    for _ in $(seq 600); do
        line=$(grep -m1 -E "$2" "$1" 2>/dev/null || true)
        [ -n "$line" ] && { echo "$line"; return; }
        sleep 0.1
    done
    echo "timed out waiting for $2 in $1" >&2; exit 2
}
