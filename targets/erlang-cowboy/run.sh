#!/bin/sh
# `run.command` of target.toml: starts the BEAM with WORKERS schedulers (+S WORKERS:WORKERS)
# and runs loadlab_cowboy:main/0, which reads and checks every other variable. A WORKERS that
# is not a whole number from 1 to 1024 (the BEAM's limit) is left to loadlab_cowboy to report
# (stderr, exit status 2); no distribution (-sname) is started, so no epmd runs.
set -eu
schedulers=
case "${WORKERS:-}" in
'' | *[!0-9]*) ;;
*) if [ "${#WORKERS}" -le 4 ] && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 1024 ]; then
    schedulers="+S $WORKERS:$WORKERS"
fi ;;
esac
# shellcheck disable=SC2086 # $schedulers is two words or none
exec erl $schedulers -noinput -pa build/ebin build/lib/*/ebin -s loadlab_cowboy main
