// Float sums, the shapes a training program reduces in: a whole tensor (a loss, a norm), rows (a
// softmax's denominators, LayerNorm's statistics), columns (a bias's gradient over the batch), a
// middle dim, and per-channel statistics (the outer and inner dims of an NCHW batch: batch norm's
// mean, at the CNN workload's two sizes). Built against kiln and, with KILN_BENCH_LIBTORCH,
// libtorch. Each input is random and computed before timing; each sum reads 16 MiB (the
// channels': the CNN's 6.1 and 3.1 MiB). The "error" counter is the first result's relative error
// against a float64 sum of the same values, so that speed and accuracy are read side by side.
#include <cmath>

#include "perf/bench_common.h"

static void sum_of(benchmark::State& state, std::vector<int64_t> shape, std::vector<int64_t> dims) {
  torch::manual_seed(0);
  auto x = torch::rand(shape) + 0.5;
  settle();
  torch::Tensor s = x.sum(dims);  // kiln compiles its kernel here, before timing
  settle();
  for (auto _ : state) {
    s = x.sum(dims);
    settle();
  }
  const double got = s.reshape({-1})[0].item<double>();
  const double exact = x.to(torch::kDouble).sum(dims).reshape({-1})[0].item<double>();
  state.counters["error"] = std::fabs(got - exact) / std::fabs(exact);
  state.SetBytesProcessed(int64_t(state.iterations()) * x.numel() * 4);
}

static void BM_SumAll(benchmark::State& state) { sum_of(state, {1 << 22}, {0}); }
static void BM_SumRows(benchmark::State& state) { sum_of(state, {4096, 1024}, {1}); }
static void BM_SumLongRows(benchmark::State& state) { sum_of(state, {4, 1 << 20}, {1}); }
static void BM_SumColumns(benchmark::State& state) { sum_of(state, {4096, 1024}, {0}); }
static void BM_SumMiddle(benchmark::State& state) { sum_of(state, {16, 16384, 16}, {1}); }
static void BM_SumChannels(benchmark::State& state) { sum_of(state, {64, 32, 28, 28}, {0, 2, 3}); }
static void BM_SumChannels14(benchmark::State& state) { sum_of(state, {64, 64, 14, 14}, {0, 2, 3}); }
BENCHMARK(BM_SumAll)->UseRealTime();
BENCHMARK(BM_SumRows)->UseRealTime();
BENCHMARK(BM_SumLongRows)->UseRealTime();
BENCHMARK(BM_SumColumns)->UseRealTime();
BENCHMARK(BM_SumMiddle)->UseRealTime();
BENCHMARK(BM_SumChannels)->UseRealTime();
BENCHMARK(BM_SumChannels14)->UseRealTime();

static WaitForCompilers wait_for_compilers;

BENCHMARK_MAIN();
