// Fusion workloads: the tanh-form GELU as nine elementwise ops, and LayerNorm + GELU forward and
// backward. Run with `--benchmark_filter` as needed; bytes/s is reported for the GELU chain so
// it can be read against the triad's bandwidth.
#include "perf/bench_common.h"

static torch::Tensor gelu_chain(const torch::Tensor& x) {
  auto x3 = x * x * x;
  auto inner = (x + x3 * 0.044715) * 0.7978845608;
  return (x * 0.5) * (torch::tanh(inner) + 1.0);
}

static void BM_GeluChain(benchmark::State& state) {
  const int64_t n = int64_t(1) << 22;  // 4M floats
  auto x = torch::randn({n});
  auto step = [&] {
    auto y = gelu_chain(x);
    settle();
    benchmark::DoNotOptimize(y);
  };
  step();  // compiles (or loads) the kernel outside the timed loop
  for (auto _ : state) step();
  state.SetBytesProcessed(int64_t(state.iterations()) * n * 8);  // read x, write y
}
BENCHMARK(BM_GeluChain)->Unit(benchmark::kMillisecond)->UseRealTime();

#ifndef KILN_BENCH_LIBTORCH
// The same program with every op run at once: kiln's eager baseline.
static void BM_GeluChainEager(benchmark::State& state) {
  kiln::set_lazy(false);
  BM_GeluChain(state);
  kiln::set_lazy(true);
}
BENCHMARK(BM_GeluChainEager)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

static void BM_LayerNormGelu(benchmark::State& state) {
  torch::manual_seed(0);
  auto x = torch::randn({512, 1024}, torch::requires_grad());
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({1024}));
  auto grad = torch::randn({512, 1024});
  auto step = [&] {
    auto y = torch::gelu(ln->forward(x));
    y.backward(grad);
    settle();
    benchmark::DoNotOptimize(x.grad());
    x.mutable_grad() = torch::Tensor();
    ln->zero_grad();
  };
  step();
  for (auto _ : state) step();
}
BENCHMARK(BM_LayerNormGelu)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_Triad1(benchmark::State& state) { triad(state, 1); }
static void BM_Triad2(benchmark::State& state) { triad(state, 2); }
BENCHMARK(BM_Triad1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
