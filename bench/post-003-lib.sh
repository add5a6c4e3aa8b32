# Shared by post 003's bench scripts (post-003.sh on one host, post-003-hosts.sh on three):
# sourced, not run.

# A cell's loadlab flags.
cell_flags() { # cell -> loadlab flags
    case $1 in
    http-persistent) ;;
    http-new) echo --no-keepalive ;;
    https-persistent) echo --tls ;;
    https-new) echo --tls --no-keepalive --tls-resume "${TLS_RESUME:-on}" ;;
    *) echo "unknown cell $1 (http-new, http-persistent, https-new, https-persistent)" >&2; exit 2 ;;
    esac
}

# The table of a run's cells from their capacity documents in $1 (targets $2, cells $3); with
# a fourth argument "clock", a column with the clock offset the session noted in each log.
post003_table() {
    python3 - "$1" "$2" "$3" "${4:-}" <<'PY'
import json, os, re, sys
out, targets, cells, clock = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "clock"
n = lambda v: f"{v:,.0f}"
head = "| target | cell | capacity at 85% of one core (range) | boundary probe: req/s | p99 | core busy |"
print(head + (" clock offset ± |" if clock else ""))
print("|---" * (7 if clock else 6) + "|")
for t in targets:
    for cell in cells:
        path = os.path.join(out, f"{t}-{cell}.json")
        log = os.path.join(out, f"{t}-{cell}.log")
        text = open(log).read() if os.path.exists(log) else ""
        m = re.search(r"clock offset ([+-][0-9.]+ ms) ± ([0-9.]+ ms)", text)
        offset = (f" {m.group(1)} ± {m.group(2)} |" if m else " - |") if clock else ""
        if not os.path.exists(path):
            why = text.strip().splitlines()[-1:] or ["no output"]
            print(f"| {t} | {cell} | - ({why[0][:90]}) | | | |" + offset)
            continue
        doc = json.load(open(path))
        f = doc.get("finding") or {}
        found = (f"{n(f['estimate'])}/s ({n(f['low'])}-{n(f['high'])})"
                 if f.get("kind") == "capacity" else doc.get("verdict", "-"))
        passing = [p["measure"] for p in doc["probes"] if p["judgment"]["pass"]]
        best = max(passing, key=lambda m: m.get("server_cpu_share") or 0, default=None)
        if best is None:
            print(f"| {t} | {cell} | {found} | - | - | - |" + offset)
            continue
        p99, cpu = best.get("p99_us"), best.get("server_cpu_share")
        tail = (f"{p99 / 1000:.1f} ms | {100 * cpu:.0f}% |" if p99 is not None and cpu is not None
                else "- | - |")
        print(f"| {t} | {cell} | {found} | {n(best['achieved_per_s'])} | " + tail + offset)
PY
}
