#!/usr/bin/env python3
# Per-request user-space instructions by function: (run of n2 - run of n1) / (n2 - n1).
# usage: callgrind-per-request.py FILE1 N1 FILE2 N2 [TOP]
import re, subprocess, sys, collections
def load(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", f], capture_output=True, text=True).stdout
    d = collections.Counter(); total = 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)$", line)
        if not m: continue
        n = int(m.group(1).replace(",", "")); rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"): total = n; continue
        fn = rest.split(":", 1)[1] if ":" in rest else rest
        fn = re.sub(r" \[[^\]]*\]$", "", fn)
        d[fn] += n
    return d, total
f1, n1, f2, n2 = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
top = int(sys.argv[5]) if len(sys.argv) > 5 else 40
a, ta = load(f1); b, tb = load(f2)
k = n2 - n1
print(f"total per request: {(tb - ta) / k:,.0f}")
diff = {fn: (b[fn] - a[fn]) / k for fn in set(a) | set(b)}
for fn, v in sorted(diff.items(), key=lambda x: -x[1])[:top]:
    print(f"{v:8.1f}  {fn[:150]}")
