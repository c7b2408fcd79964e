#!/bin/bash
# Issue 35's figures: what a process with an empty kernel cache waits for. Rounds interleave the
# variants (the machine is shared: compare within a run).
#   bash perf/cold_start.sh [build folder] [rounds]
# 1. The first MLP training step (perf/first_step.cpp) from an empty cache, KILN_COMPILE=wait (every
#    kernel compiled before it runs: the old default) against background (the default: unfused).
# 2. Steady steps on the per-op kernels alone (KILN_BACKEND=unfused) against warm fused kernels, and
#    a cold process's steps 2-20 while its kernels compile (min and median of each run's steps).
# 3. `kiln train --epochs 2` from an empty cache against the same with that cache filled, waiting
#    for compilers and not.
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
step=$build/perf/first_step
kiln=$build/cli/kiln
stat() {  # min and median of the step_<i>_seconds lines 2.. of first_step's output, in ms
  grep -E '^step_' | awk 'NR > 1 { print $2 * 1000 }' | sort -g |
    awk '{ v[NR] = $1 } END { printf "min %.1f ms, median %.1f ms (%d steps)", v[1], v[int((NR + 1) / 2)], NR }'
}
warm=$(mktemp -d)
KILN_CACHE_DIR=$warm KILN_COMPILE=wait $step 2 > /dev/null
for r in $(seq "$rounds"); do
  echo "== round $r (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  cold=$(mktemp -d)
  echo "first step, wait:       $(KILN_CACHE_DIR=$cold KILN_COMPILE=wait $step 1 | grep first_step)"
  rm -rf "$cold" && cold=$(mktemp -d)
  echo "first step, background: $(KILN_CACHE_DIR=$cold $step 1 | grep first_step)"
  rm -rf "$cold" && cold=$(mktemp -d)
  echo "cold, steps 2-20 while compiling: $(KILN_CACHE_DIR=$cold $step 20 | stat)"
  rm -rf "$cold"
  echo "warm fused steps:       $(KILN_CACHE_DIR=$warm $step 20 | stat)"
  echo "unfused steps:          $(KILN_CACHE_DIR=$warm KILN_BACKEND=unfused $step 20 | stat)"
done
if [ -x "$kiln" ] && [ -z "${KILN_SKIP_TRAIN:-}" ]; then
  for compile in wait background; do
    cold=$(mktemp -d)
    for run in cold warm; do
      start=$(date +%s.%N)
      KILN_CACHE_DIR=$cold KILN_COMPILE=$compile $kiln train --epochs 2 > /dev/null 2>&1
      echo "kiln train --epochs 2, KILN_COMPILE=$compile, $run cache: $(echo "$(date +%s.%N) - $start" | bc) s"
    done
    rm -rf "$cold"
  done
fi
rm -rf "$warm"
