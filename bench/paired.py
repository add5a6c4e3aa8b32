#!/usr/bin/env python3
"""Paired rounds of generators, as the bench/vs-*.sh scripts run them: one ratio per round
(this tool's figure over the other's, from runs made back to back), and their centre with an
exact 95% interval. The one helper of every bench: bench/lib.sh's `alternate` calls
`summary`, bench/vs-wrk.sh's closing note `headline`, bench/vs-oha-vegeta.sh imports
`paired_ratio`.

Why paired, and why this interval: on a shared VM the machine's speed drifts between minutes
(two five-round runs of the same comparison gave 1.19x and 0.90x wrk's rate), and rounds run
back to back see the same machine, so the ratio within a round cancels most of the drift.
The interval is `loadlab compare`'s rule (crates/loadlab-compare: Hodges-Lehmann estimate,
exact distribution-free interval from inverting a rank test, on the log scale so that it is
a ratio), in its paired form: the one-sample Hodges-Lehmann estimate (the median of the
Walsh averages of the rounds' log ratios) and the interval from the exact null distribution
of Wilcoxon's signed-rank statistic. k is the largest rank with P(T <= k - 1) <= alpha/2,
the interval [W(k), W(M + 1 - k)] of the M = n(n+1)/2 sorted Walsh averages, as in
hodges_lehmann.rs. Fewer than 6 rounds allow no 95% interval (P(T = 0) = 1/2^n > 2.5%).

    python3 bench/paired.py summary ROUNDS_FILE SECS TOOL...   # lines "round tool requests cpu_s server_cpu_s"
    python3 bench/paired.py headline ROUNDS_FILE OURS PEER[:GOAL]...
    python3 bench/paired.py self-test
"""
import math
import statistics
import sys

CONFIDENCE = 0.95


def signed_rank_counts(n):
    """How many of the 2^n sign patterns give each value of T+ (0 .. n(n+1)/2), no ties."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for t, c in enumerate(counts):
            grown[t + rank] += c
        counts = grown
    return counts


def interval_rank(n, confidence=CONFIDENCE):
    """(k, coverage): the interval is [W(k), W(M + 1 - k)]; k is None when none reaches
    `confidence`, and coverage is then that of the widest, [W(1), W(M)]."""
    counts = signed_rank_counts(n)
    total = 2 ** n
    # The same hair of slack as hodges_lehmann.rs, so that an exact 1 - alpha is admitted.
    half_alpha = (1 - confidence) / 2 * (1 + 1e-9)
    walsh = n * (n + 1) // 2
    k_max = max((walsh + 1) // 2, 1)
    k, below = 0, 0
    while k < k_max and below + counts[k] <= half_alpha * total:
        below += counts[k]
        k += 1
    # below = #{T <= k - 1}; for k = 0 report the widest interval's coverage.
    at_most = below if k > 0 else counts[0]
    return (k if k > 0 else None), 1 - 2 * at_most / total


def paired_ratio(ratios, confidence=CONFIDENCE):
    """The centre of per-round ratios and its interval: (estimate, (low, high) or None,
    coverage). On the log scale, so 0.5x and 2x are as far from 1x."""
    if not ratios or any(not (r > 0 and math.isfinite(r)) for r in ratios):
        raise ValueError(f"ratios must be positive numbers, got {ratios}")
    logs = [math.log(r) for r in ratios]
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(len(logs)) for j in range(i, len(logs)))
    estimate = math.exp(statistics.median(walsh))
    k, coverage = interval_rank(len(ratios), confidence)
    interval = None if k is None else (math.exp(walsh[k - 1]), math.exp(walsh[len(walsh) - k]))
    return estimate, interval, coverage


def describe(ratios, lower_is_better=False):
    """'0.987x (95% interval 0.962x to 1.011x, 10 rounds)', or why there is no interval."""
    estimate, interval, coverage = paired_ratio(ratios)
    n = len(ratios)
    if interval is None:
        reachable = f": at most {coverage * 100:.0f}%" if coverage > 0 else ""
        return (f"{estimate:.3f}x (no 95% interval from {n} round{'s' if n != 1 else ''}"
                f"{reachable}; ROUNDS=6 or more)")
    low, high = interval
    side = ""
    if high < 1:
        side = ", lower" + (": better" if lower_is_better else "")
    elif low > 1:
        side = ", higher" + (": worse" if lower_is_better else "")
    return f"{estimate:.3f}x (95% interval {low:.3f}x to {high:.3f}x, {n} rounds{side})"


def read_rounds(path, secs):
    """{tool: {round: (requests, cpu_s, server_cpu_s or None)}} from `alternate`'s file."""
    runs = {}
    for line in open(path):
        r, tool, n, c, v = line.split()
        runs.setdefault(tool, {})[int(r)] = (int(n), float(c), None if v == "-" else float(v))
    return runs


def paired(runs, ours, peer):
    """Per-round (requests/s ratio, CPU-per-request ratio) of `ours` over `peer`, for the rounds
    both ran with requests."""
    rate, cpu = [], []
    for r, (n, c, _) in sorted(runs.get(ours, {}).items()):
        if r not in runs.get(peer, {}):
            continue
        pn, pc, _ = runs[peer][r]
        if n > 0 and pn > 0 and c > 0 and pc > 0:
            rate.append(n / pn)
            cpu.append((c / n) / (pc / pn))
    return rate, cpu


def summary(path, secs, tools):
    runs = read_rounds(path, secs)
    print(f"\n{'tool':<16} {'median requests/s':>18} {'CPU-s per 100k':>15} {'server core busy':>17}")
    full = []
    for tool in tools:
        rs = list(runs.get(tool, {}).values())
        if not rs:
            continue
        busy = [v / secs for _, _, v in rs if v is not None]
        rps = statistics.median(n / secs for n, _, _ in rs)
        cpu = statistics.median(c * 100000 / n for n, c, _ in rs if n > 0) if any(n for n, _, _ in rs) else float("nan")
        b = f"{statistics.median(busy) * 100:.0f}%" if busy else "-"
        if busy and statistics.median(busy) >= 0.95:
            full.append(tool)
        print(f"{tool:<16} {rps:>18,.0f} {cpu:>15.2f} {b:>17}")
    # loadlab's arms against every other tool, round by round.
    ours = [t for t in tools if t.startswith("loadlab")]
    peers = [t for t in tools if not t.startswith("loadlab")] or tools[:1]
    print("\npaired rounds (each round's ratio to the peer's run beside it; Hodges-Lehmann "
          "with its exact 95% interval, as loadlab compare):")
    for o in ours:
        for p in peers:
            if p == o:
                continue
            rate, cpu = paired(runs, o, p)
            if not rate:
                continue
            print(f"  {o}/{p} CPU per request: {describe(cpu, lower_is_better=True)}")
            print(f"  {o}/{p} requests/s: {describe(rate)}")
    if full:
        print(f"\nthe server's core was at least 95% busy (median of the rounds) under {', '.join(full)}: "
              "there the rate is the server's limit, not the generator's, and requests/s compares "
              "the server's cost per request under each tool; the generators differ in CPU per request.")


def headline(path, ours, peers):
    """The closing note: `ours` against each peer, CPU per request first; a peer given as
    NAME:GOAL also says whether the CPU ratio's interval lies within GOAL (e.g. 1.02)."""
    runs = read_rounds(path, 1.0)
    for spec in peers:
        peer, _, goal = spec.partition(":")
        rate, cpu = paired(runs, ours, peer)
        if not cpu:
            print(f"{ours} against {peer}: no round ran both")
            continue
        print(f"{ours} against {peer}: CPU per request {describe(cpu, lower_is_better=True)}; "
              f"requests/s {describe(rate)}")
        if goal:
            g = float(goal)
            _, interval, _ = paired_ratio(cpu)
            if interval is None:
                verdict = "undecided (too few rounds for an interval)"
            elif interval[1] <= g:
                verdict = "met (the whole interval is at or below it)"
            elif interval[0] > g:
                verdict = "not met (the whole interval is above it)"
            else:
                verdict = "undecided (the interval straddles it: more rounds, or a quieter machine)"
            print(f"  goal, CPU per request within {(g - 1) * 100:.0f}% of {peer} (at most {g:.2f}x): {verdict}")


def self_test():
    # Two-sided 5% critical values of Wilcoxon's signed-rank T from published tables (reject
    # when T <= value): the interval rank is the value plus one; none below n = 6.
    for n, critical in [(6, 0), (7, 2), (8, 3), (9, 5), (10, 8), (12, 13), (15, 25), (20, 52)]:
        k, coverage = interval_rank(n)
        assert k == critical + 1, (n, k, critical)
        assert coverage >= 0.95, (n, coverage)
    for n in range(1, 6):
        assert interval_rank(n)[0] is None, n
    # n = 5: the widest interval covers 1 - 2/32.
    assert abs(interval_rank(5)[1] - (1 - 2 / 32)) < 1e-12
    assert sum(signed_rank_counts(10)) == 2 ** 10
    # Scale: ratios of 2 and 0.5 balance at 1; a constant ratio is its own interval.
    est, interval, _ = paired_ratio([2.0, 0.5])
    assert abs(est - 1.0) < 1e-12 and interval is None
    est, interval, _ = paired_ratio([1.05] * 8)
    assert abs(est - 1.05) < 1e-12 and all(abs(x - 1.05) < 1e-12 for x in interval)
    # Eight rounds, k = 4: the 4th lowest and highest of the 36 Walsh averages; T <= 3 in 5
    # of the 256 sign patterns (T = 0, 1, 2 and two ways to 3).
    ratios = [0.97, 0.99, 1.01, 1.02, 0.98, 1.00, 1.03, 0.96]
    est, (low, high), coverage = paired_ratio(ratios)
    logs = [math.log(r) for r in ratios]
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(8) for j in range(i, 8))
    assert abs(low - math.exp(walsh[3])) < 1e-12 and abs(high - math.exp(walsh[-4])) < 1e-12
    assert low < est < high and abs(coverage - (1 - 2 * 5 / 256)) < 1e-12
    for bad in ([], [0.0], [-1.0], [float("nan")]):
        try:
            paired_ratio(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")
    print("paired.py: self-test passed")


def main(argv):
    if len(argv) >= 2 and argv[1] == "self-test":
        return self_test()
    if len(argv) >= 5 and argv[1] == "summary":
        return summary(argv[2], float(argv[3]), argv[4:])
    if len(argv) >= 5 and argv[1] == "headline":
        return headline(argv[2], argv[3], argv[4:])
    sys.exit(__doc__.split("\n\n")[-1])


if __name__ == "__main__":
    main(sys.argv)
