#!/usr/bin/env bash
# Configures one scratch build folder as the two quick-start commands do, in both orders: the test
# command's options (everything on), the main job's (tests, perf and examples off), then on again.
# A configure that fails on a folder the other command configured fails here. Configures only.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
on=(-DKILN_BUILD_TESTS=ON -DKILN_BUILD_PERF=ON -DKILN_BUILD_EXAMPLES=ON -DKILN_BUILD_CLI=ON)
off=(-DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PERF=OFF -DKILN_BUILD_EXAMPLES=OFF)
for options in on off on; do
  declare -n chosen=$options
  echo "configure with the ${options} options"
  cmake -S "$source_dir" -B "$scratch" -DCMAKE_BUILD_TYPE=Release "${chosen[@]}" >"$scratch.log" 2>&1 ||
    { cat "$scratch.log"; rm -f "$scratch.log"; exit 1; }
done
rm -f "$scratch.log"
