#!/usr/bin/env bash
# Fuzzes the readers of untrusted files (tests/fuzz: safetensors, IDX, kernel cache entries) with
# libFuzzer: installs clang, builds kiln and the targets with AddressSanitizer and UBSan in
# build-fuzz/ (a folder of its own: clang, not the main build's compiler), then runs each target
# for SECONDS on a copy of its seed corpus, and prints a line per target. Exit status 1 when any
# target found something; its input is kept under build-fuzz/runs/<target>/artifacts/, and the
# replay program of the normal build (build/tests/fuzz/fuzz_<target>_replay FILE) reruns it.
#
#   bash scripts/fuzz.sh [SECONDS [TARGET...]]   (default 600 s each; all targets)
#   JOBS=2 bash scripts/fuzz.sh 60 idx           (build with 2 jobs, fuzz the IDX reader a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors idx disk_cache)

bash scripts/deps.sh clang libclang-rt-14-dev
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_BUILD_FUZZERS=ON \
  -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PERF=OFF -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_CLI=OFF >/dev/null
cmake --build build-fuzz -j"${JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

# A header claiming 2^40 elements must fail before allocating them: -malloc_limit_mb reports any
# single allocation above 512 MB as a finding, -rss_limit_mb a process above 2 GB, -timeout an
# input that takes over 10 s.
export UBSAN_OPTIONS=print_stacktrace=1
failed=0
summary=()
for target in "${targets[@]}"; do
  run=build-fuzz/runs/$target
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/artifacts"
  cp tests/fuzz/corpus/"$target"/* "$run/corpus/"
  seeds=$(ls "$run/corpus" | wc -l)
  echo "fuzzing $target for $seconds s (log: $run/log)"
  status=0
  "build-fuzz/tests/fuzz/fuzz_$target" "$run/corpus" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -timeout=10 -dict="tests/fuzz/$target.dict" -artifact_prefix="$run/artifacts/" \
    -print_final_stats=1 >"$run/log" 2>&1 ||
    status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -1)
  findings=$(ls "$run/artifacts")
  if [ "$status" -ne 0 ] || [ -n "$findings" ]; then
    failed=1
    tail -n 40 "$run/log"
  fi
  summary+=("fuzz_$target: $seconds s, ${executions:-?} executions, corpus $seeds seeds -> $(ls "$run/corpus" | wc -l) \
files ($(du -sb "$run/corpus" | cut -f1) bytes), exit status $status, findings: ${findings:-none}")
done
printf '%s\n' "${summary[@]}"
exit $failed
