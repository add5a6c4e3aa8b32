#!/usr/bin/env bash
# The io_uring floor (bench/uring-floor: the least CPU a closed-loop client spends per request
# here) is an arm of bench/vs-wrk.sh's rounds, beside wrk and loadlab, so that the three meet
# the same machine in each round and loadlab's ratio to each comes with its interval. This
# name stays for the commands docs/generator.md quotes; it runs that benchmark.
#
#   bash bench/uring-floor.sh                 # bash bench/vs-wrk.sh: 10 rounds of 10 s
#   ROUNDS=6 SECS=5 bash bench/uring-floor.sh
exec bash "$(dirname "$0")/vs-wrk.sh" "$@"
