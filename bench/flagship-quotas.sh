#!/usr/bin/env bash
# Issue 27, item 2: does the flagship's answer (post 000: actix-web against axum on Cloud Run's
# smallest instance) hold on any machine? A faster or slower machine is a larger or smaller CPU
# quota for the same work, so the experiment runs at 0.75x, 1x and 1.25x of the 0.08-CPU quota
# (0.06, 0.08, 0.10), prints each table, then says which verdicts held at all three quotas and
# which did not (a verdict that points one way at one quota and the other way at another is
# FLIPPED; one that is significant at some quotas only is NOT HELD).
#
#   bash bench/flagship-quotas.sh                                   # full length (~25 min, as root)
#   bash bench/flagship-quotas.sh --repetitions 2 --duration 2s     # a shortened check
#   LOADLAB=target/release/loadlab QUOTAS="0.06 0.08 0.10" bash bench/flagship-quotas.sh
#
# Extra arguments go to every `loadlab experiment` call. Without root, add
# `--limits best-effort` (the quota is then not enforced and the comparison says nothing about
# it). Each quota's runs go to their own store under $OUT, so nothing mixes between quotas.
set -euo pipefail
cd "$(dirname "$0")/.."
QUOTAS=${QUOTAS:-"0.06 0.08 0.10"}
OUT=${OUT:-bench/out/flagship-quotas}
SCENARIO=scenarios/portfolio-migration.toml
if [ -z "${LOADLAB:-}" ]; then
    cargo build --release -q -p loadlab-cli
    LOADLAB=target/release/loadlab
fi
rm -rf "$OUT"
mkdir -p "$OUT"

for quota in $QUOTAS; do
    grep -q '^cpus = ' "$SCENARIO" || { echo "$SCENARIO has no 'cpus = ' line to scale" >&2; exit 2; }
    # The copy sits next to the original so that anything the file names relative to its
    # directory resolves the same; it is removed when the script ends.
    copy="scenarios/.flagship-quota-$quota.toml"
    trap 'rm -f scenarios/.flagship-quota-*.toml' EXIT
    sed "s/^cpus = .*/cpus = $quota/" "$SCENARIO" > "$copy"
    echo "== quota $quota of a CPU"
    "$LOADLAB" experiment "$copy" --db "$OUT/q$quota.db" "$@" | tee "$OUT/table-$quota.txt"
    "$LOADLAB" compare portfolio-migration:actix-web portfolio-migration:axum \
        --db "$OUT/q$quota.db" --format json > "$OUT/compare-$quota.json"
    rm -f "$copy"
done

python3 - "$OUT" $QUOTAS <<'PY'
import json, re, sys
out, quotas = sys.argv[1], sys.argv[2:]

def verdict(row):
    """A verdict's direction in words: better, worse, or why there is none."""
    c = row.get("comparison")
    if c is None:
        note = row.get("note") or "not tested"
        return "no verdict (on a cliff)" if "on a cliff" in note else "no verdict"
    kind = c["verdict"]["kind"]
    return {"better": "better", "worse": "worse", "no_difference": "~",
            "equivalent": "equivalent", "inconclusive": "inconclusive"}[kind]

table = {}  # metric -> {quota: verdict}
for q in quotas:
    comparisons = json.load(open(f"{out}/compare-{q}.json"))
    for row in comparisons[0]["rows"]:
        # The cliff's threshold moves with the quota; the metric is the same.
        name = "share beyond the cliff" if row["metric"] == "beyond_cliff" else row["label"]
        table.setdefault(name, {})[q] = verdict(row)

held, not_held, flipped = [], [], []  # held: the same verdict at every quota
for name, by_quota in table.items():
    seen = [by_quota.get(q, "absent") for q in quotas]
    line = f"  {name:<28} " + "  ".join(f"{q}: {v}" for q, v in zip(quotas, seen))
    directions = {v for v in seen if v in ("better", "worse")}
    if len(directions) > 1:
        flipped.append(line)
    elif len(set(seen)) == 1:
        held.append(line)
    else:
        not_held.append(line)

print(f"\n== verdicts across quotas {', '.join(quotas)} (test axum against control actix-web)")
for title, lines in [("the same at every quota", held),
                     ("not held (significant or tested at some quotas only)", not_held),
                     ("FLIPPED (one way at one quota, the other way at another)", flipped)]:
    print(f"{title}: {len(lines)}")
    for l in lines:
        print(l)
PY
