// perf/workloads.cpp's rows as a Google Benchmark program (kiln, or libtorch with
// -DKILN_BENCH_LIBTORCH); `kiln bench` runs them side by side and prints the table.
#include <benchmark/benchmark.h>

#include "perf/bench_common.h"

static WaitForCompilers wait_for_compilers;

BENCHMARK_MAIN();
