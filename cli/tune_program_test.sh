#!/bin/sh
# cli.tune_program: `kiln tune -- PROGRAM ARGS` runs the program once (a wrapper counts its runs)
# and tunes the kernels it recorded. Usage: tune_program_test.sh CACHE_DIR KILN PROGRAM [ARGS...]
set -e
cache=$1
kiln=$2
shift 2
rm -rf "$cache" "$cache.runs"
KILN_CACHE_DIR="$cache" "$kiln" tune --budget 2 --jobs 2 -- sh -c 'echo ran >> "$0"; exec "$@"' "$cache.runs" "$@"
echo "program runs: $(wc -l < "$cache.runs")"
