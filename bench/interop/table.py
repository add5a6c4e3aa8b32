"""Prints the interop matrix from cells.tsv: a row per feature, a column per server, then every
cell that is not exact with its detail, and the script's wall time. Run by bench/interop.sh."""
import sys

SHORT = {"exact": "exact", "refused as expected": "refused", "not offered": "-",
         "not installed": "n/i", "FAIL": "FAIL"}

rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
wall_s = int(sys.argv[2])
servers = list(dict.fromkeys(r[0] for r in rows))
features = list(dict.fromkeys(r[1] for r in rows if r[1] != "(server)"))
cell = {(r[0], r[1]): r[2] for r in rows}
width = max([len(f) for f in features] + [7])
print(f"{'feature':<{width}}  " + "  ".join(f"{s:>13}" for s in servers))
for f in features:
    marks = []
    for s in servers:
        v = cell.get((s, f)) or cell.get((s, "(server)")) or ""
        marks.append(f"{SHORT.get(v, v):>13}")
    print(f"{f:<{width}}  " + "  ".join(marks))
print()
print("exact: loadlab's completed count = the server's own count, no failure; refused: refused"
      " with the expected failure class, nothing reached the server; -: not offered by the"
      " server; n/i: server not installed")
print()
for r in rows:
    if r[2] != "exact":
        print(f"{r[0]:<14} {r[1]:<24} {r[2]}: {r[3]}")
counts = {}
for r in rows:
    counts[r[2]] = counts.get(r[2], 0) + 1
print()
print(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + f"; wall time {wall_s // 60} min {wall_s % 60} s")
