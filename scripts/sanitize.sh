#!/usr/bin/env bash
# Builds kiln and its tests with sanitizers and runs the tests:
#
#   bash scripts/sanitize.sh [address|thread] [--quick]
#
# address (the default): AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer, in
# build-asan; thread: ThreadSanitizer, in build-tsan. Any finding fails its test. kiln's code is
# instrumented, the compiler module's included; Halide, LLVM, OpenBLAS and the kernels Halide
# builds are not (CMakeLists.txt, KILN_SANITIZE), and the suppressions in scripts/sanitizers/ are
# for findings inside them only. The differential test runs fewer programs (KILN_FUZZ_PROGRAMS and
# KILN_FUZZ_STRUCTURES override); --quick (what scripts/test.sh runs) leaves it and the other slow
# tests out.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=address
quick=0
for arg in "$@"; do
  case "$arg" in
    address | thread) kind=$arg ;;
    --quick) quick=1 ;;
    *) echo "usage: $0 [address|thread] [--quick]" >&2; exit 2 ;;
  esac
done
bash scripts/deps.sh libasan8 libubsan1 libtsan2  # gcc 12's sanitizer runtimes

build=build-asan
[ "$kind" = thread ] && build=build-tsan
# -O1: reports keep their frames; line tables only (-g1), for a faster build.
cmake -S . -B "$build" -DKILN_SANITIZE="$kind" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DKILN_BUILD_TESTS=ON -DKILN_BUILD_PERF=OFF -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_CLI=OFF
cmake --build "$build" -j"$(nproc)"

supp=$PWD/scripts/sanitizers
# intercept_tls_get_addr=0: with it on, LeakSanitizer's own thread crashed at exit now and then
# ("Tracer caught signal 11", about one test of 240 a run, a different one each time), a fault of
# the sanitizer runtime reported upstream with glibc's dynamic TLS, which this option is the
# known workaround for: the thread-local storage of opened modules (Halide, LLVM) is then not
# scanned for pointers.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:print_suppressions=0:second_deadlock_stack=1"
export KILN_FUZZ_PROGRAMS=${KILN_FUZZ_PROGRAMS:-200} KILN_FUZZ_STRUCTURES=${KILN_FUZZ_STRUCTURES:-40}

exclude=()
# A thread started after fork in a multithreaded process is not supported by ThreadSanitizer.
[ "$kind" = thread ] && exclude+=("Parallel.AForkedChildRunsLoops")
# Quick: the unit tests, without the random programs, the configure checks (no code of their own),
# the whole Fashion-MNIST epoch (its loader's threads run in TorchDataLoader's tests), the NVRTC
# compiles of every kernel structure (NVRTC's time, not kiln's code) and the LSTM's launch count
# (its code runs in the other RNN tests).
[ "$quick" = 1 ] && exclude+=("Differential\\." "RowKernel\\.RandomRowPrograms" "Build\\."
  "TorchDataMnist\\.FashionMnist" "Cuda\\.EveryFlushedKernelStructure" "RNN\\.LstmTrainingStepLaunches")
args=()
if [ ${#exclude[@]} -gt 0 ]; then
  args=(-E "$(IFS='|'; echo "${exclude[*]}")")
fi
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "${args[@]}"
