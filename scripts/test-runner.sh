#!/usr/bin/env bash
# cargo test's runner in scripts/test.sh (`--config target.'cfg(all())'.runner`): runs each test
# binary as cargo would, in its package's directory, and gives the binaries below more test
# threads than libtest's default (one per core: 2 on CI's machine).
#
# Their tests mostly wait on sockets, child processes and timers, so two threads left the
# cores idle and the binary took the sum of its tests' times over two. Measured on the 2-core
# machine (7 Dec, beside other builds and benchmarks: load average 4 to 12; wall seconds, the
# median of the runs):
#   loadlab-session (lib)  2 threads 18 s   6 threads 9.7 s    (paired runs at load 4 to 9)
#                          11 runs of 11 passed at 6 (9 to 37 s as the load rose to 12)
#   loadlab-engine `it`    2 threads 46 s   4 threads 23.6 s   5 runs of 5 passed at 4 (once
#                          its pipeline test that failed 1 run in 20 alone was made exact)
# Left at the default:
#   loadlab-cli `it`       91 s at 2 threads, 72 to 80 s at 4, and 3 runs of 3 at 4 failed
#     in its tests paced by the clock (live: "the first interval came 190 ms before the end";
#     hostile: an open loop that never connects took 5.8 s, not under 4; websocket: the server
#     held 113 connections, not 100; interop: a cell failed).
#   loadlab-agent `it`     22 s at 2 threads, 12 s at 4 (5 of 5 passed), 13 s at 6 but 2 runs
#     of 5 failed there (the_generators_client_recovers_the_offset_and_runs_a_session: no
#     sample within its 1 s wait): not raised until that wait is understood.
#   every binary that measures rates, CPU or latency.
# A binary added here must be timed at both counts and pass 5 runs of 5 at the higher one.
#
# RUST_TEST_THREADS, when set by the caller, wins (RUST_TEST_THREADS=1 to debug a test alone).
set -euo pipefail
exe=$1
target=${exe##*/}
target=${target%-*}
case "${CARGO_PKG_NAME:-} $target" in
    "loadlab-session loadlab_session") threads=6 ;;
    "loadlab-engine it") threads=4 ;;
    *) threads= ;;
esac
if [[ -n $threads && -z ${RUST_TEST_THREADS:-} ]]; then
    export RUST_TEST_THREADS=$threads
fi
exec "$@"
