#!/usr/bin/env bash
# Builds kiln and its tests with sanitizers and runs the tests:
#
#   bash scripts/sanitize.sh [address|thread] [--quick] [--kernels-of BUILD]
#
# address (the default): AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer, in
# build-asan; thread: ThreadSanitizer, in build-tsan. Any finding fails its test. kiln's code is
# instrumented, the compiler module's included; Halide, LLVM, OpenBLAS and the kernels Halide
# builds are not (CMakeLists.txt, KILN_SANITIZE), and the suppressions in scripts/sanitizers/ are
# for findings inside them only. The differential test runs fewer programs (KILN_FUZZ_PROGRAMS and
# KILN_FUZZ_STRUCTURES override); --quick (what scripts/test.sh runs) leaves it and the other slow
# tests out. --kernels-of BUILD (scripts/test.sh passes its release build): the tests load BUILD's
# compiler module, so they find the kernels BUILD's own test run put in the kernel cache instead of
# compiling each again through the instrumented module (kernels are Halide's output either way, never
# instrumented, and the same for the same tree); the lowering's own tests still compile theirs
# through the instrumented module, first, so that its code runs under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=address
quick=0
kernels_of=
while [ $# -gt 0 ]; do
  case "$1" in
    address | thread) kind=$1 ;;
    --quick) quick=1 ;;
    --kernels-of) kernels_of=$(cd "${2:?--kernels-of names a build folder}" && pwd); shift ;;
    *) echo "usage: $0 [address|thread] [--quick] [--kernels-of BUILD]" >&2; exit 2 ;;
  esac
  shift
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
run_tests() {  # ctest over the tests not excluded, with the extra arguments given
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -E "$(IFS='|'; echo "${exclude[*]}")" "$@"
}
[ ${#exclude[@]} -gt 0 ] || exclude=("^$")
if [ -z "$kernels_of" ]; then
  run_tests
  exit
fi
module=$kernels_of/libkiln_halide_compiler.so
[ -f "$module" ] || { echo "$0: $kernels_of has no compiler module ($module)" >&2; exit 2; }
lowering='^(Fusion|RowKernel|Dtypes|OpsReduce|SizeSpecialization|Tune)\.|/Sums\.'
run_tests -R "$lowering"
exclude+=("$lowering")
KILN_HALIDE_COMPILER=$module run_tests
