// The cost of one op, as seen by the user's thread. Built twice from this source: against kiln
// (tracing: the op is recorded, not run) and, with KILN_BENCH_LIBTORCH, against libtorch (eager
// dispatch plus a tiny kernel). The per-op time is the benchmark's time divided by kOps, reported
// as the "per_op_ns" counter.
#include "perf/bench_common.h"

constexpr int kOps = 100;

// A chain of dependent elementwise ops on a small tensor: the overhead-bound case; with
// `requires_grad`, autograd also records a backward node for every op.
static void chain_of_ops(benchmark::State& state, bool requires_grad) {
  auto x = torch::ones({8}, torch::requires_grad(requires_grad));
  settle();  // x itself is computed before timing
  for (auto _ : state) {
    auto y = x;
    for (int i = 0; i < kOps / 2; ++i) y = y * 1.0001 + 0.5;
    benchmark::DoNotOptimize(y);
    y = torch::Tensor();  // freeing the graph is part of what an op costs
    settle();             // the chain is dead: kiln's flush computes nothing
  }
  state.counters["per_op_ns"] = benchmark::Counter(
      double(kOps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
// The same chain, its result live and read (end to end: tracing, the flush with its plan cached,
// one fused kernel's launch, the read; libtorch runs each op's kernel as it goes).
static void BM_ChainOfOpsComputed(benchmark::State& state) {
  auto x = torch::ones({8});
  settle();
  for (auto _ : state) {
    auto y = x;
    for (int i = 0; i < kOps / 2; ++i) y = y * 1.0001 + 0.5;
    benchmark::DoNotOptimize(y[0].item<float>());
  }
  state.counters["per_op_ns"] = benchmark::Counter(
      double(kOps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ChainOfOpsComputed);
static void BM_ChainOfOps(benchmark::State& state) { chain_of_ops(state, false); }
static void BM_ChainOfOpsWithGrad(benchmark::State& state) { chain_of_ops(state, true); }
BENCHMARK(BM_ChainOfOps);
BENCHMARK(BM_ChainOfOpsWithGrad);

static WaitForCompilers wait_for_compilers;

BENCHMARK_MAIN();
