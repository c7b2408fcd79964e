// Workload rows for the side-by-side table (perf/side_by_side.py) and the machine's limits that
// bound them. Each workload sets counters from which a floor is computed:
//   bytes  - a lower bound on the bytes one iteration must move to and from memory;
//   flops  - the floating-point operations one iteration must do (matmuls only);
//   check  - a value computed once, outside the timed loop, from the same seeded inputs: kiln
//            and libtorch draw the same random numbers, so the two sides must agree (the script
//            compares them; a row whose checks differ times a different computation).
// kiln also reports `launches` (kernels per iteration) and `compiled` (kernels built inside the
// timed loop: it must be 0, or the row times the compiler).
#include <cmath>

#include "perf/bench_common.h"
#include "perf/bench_mlp.h"

namespace {

#ifndef KILN_BENCH_LIBTORCH
struct KilnCounters {
  kiln::Stats before = kiln::stats();
  void report(benchmark::State& state) const {
    const auto after = kiln::stats();
    state.counters["launches"] =
        benchmark::Counter(double(after.kernel_launches - before.kernel_launches), benchmark::Counter::kAvgIterations);
    state.counters["compiled"] = double(after.kernels_compiled - before.kernels_compiled);
  }
};
#else
struct KilnCounters {
  void report(benchmark::State&) const {}
};
#endif

void set_floor_counters(benchmark::State& state, double bytes, double flops, double check) {
  if (bytes > 0) {
    state.counters["bytes"] = bytes;
    state.SetBytesProcessed(int64_t(state.iterations() * bytes));
  }
  if (flops > 0) state.counters["flops"] = flops;
  state.counters["check"] = check;
}

}  // namespace

// 2000 dependent ops on 8 floats, then one read: the per-op overhead, nothing else. No floor
// (32 bytes; the memory and flop floors are nanoseconds).
static void BM_TinyOps(benchmark::State& state) {
  constexpr int kOps = 2000;
  auto run = [] {
    auto x = torch::ones({8});
    for (int i = 0; i < kOps / 4; ++i) {
      x = x * 1.0001;
      x = x + 0.0001;
      x = torch::relu(x);
      x = x * 0.9999;
    }
    return x[0].item<float>();
  };
  const float check = run();
  KilnCounters k;
  for (auto _ : state) benchmark::DoNotOptimize(run());
  k.report(state);
  set_floor_counters(state, 0, 0, check);
  state.counters["per_op_ns"] = benchmark::Counter(double(kOps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate |
                                                                           benchmark::Counter::kInvert);
}
BENCHMARK(BM_TinyOps)->Unit(benchmark::kMillisecond)->UseRealTime();

// Softmax cross-entropy, forward and backward, over 2048 rows of 1000 classes. Bytes floor: read
// the logits once and write their gradient once, 2 * 2048 * 1000 * 4 B = 16.4 MB (a fused
// implementation needs a second read of the logits unless a row stays in cache, which 4 KB rows
// do; labels are 16 KB).
static void BM_SoftmaxCrossEntropy(benchmark::State& state) {
  constexpr int64_t N = 2048, C = 1000;
  torch::manual_seed(0);
  auto logits = torch::randn({N, C}, torch::requires_grad());
  auto labels = torch::randint(0, C, {N});
  float loss_value = 0;
  auto step = [&](bool read) {
    auto loss = torch::nn::functional::cross_entropy(logits, labels);
    loss.backward();
    settle();
    if (read) loss_value = loss.item<float>();
    benchmark::DoNotOptimize(logits.grad());
    logits.mutable_grad() = torch::Tensor();
  };
  step(true);  // compiles (or loads) the kernels; the check value
  KilnCounters k;
  for (auto _ : state) step(false);
  k.report(state);
  set_floor_counters(state, 2.0 * N * C * 4, 0, loss_value);
}
BENCHMARK(BM_SoftmaxCrossEntropy)->Unit(benchmark::kMillisecond)->UseRealTime();

// One Adam step over 40 parameters of 256x256 whose gradients were set once, before timing (a
// step never clears them, so every step sees the same gradients). Bytes floor: read p, grad,
// exp_avg, exp_avg_sq and write p, exp_avg, exp_avg_sq: 7 * 4 B * 40 * 65536 = 73.4 MB.
static void BM_AdamStep(benchmark::State& state) {
  constexpr int kParams = 40;
  constexpr int64_t kElems = 256 * 256;
  torch::manual_seed(0);
  std::vector<torch::Tensor> params, before;
  for (int i = 0; i < kParams; ++i) {
    auto p = torch::randn({256, 256}, torch::requires_grad());
    p.mutable_grad() = torch::randn({256, 256});
    before.push_back(p.detach().clone());
    params.push_back(p);
  }
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-3));
  auto step = [&] {
    adam.step();
    settle();
    benchmark::DoNotOptimize(params.back());
  };
  step();  // creates the moments; compiles the first step's kernels
  // Check: sum of (p - p0) * grad after one step, about -lr * sum|grad| (-2.1e3).
  double check = 0;
  for (int i = 0; i < kParams; ++i)
    check += ((params[i].detach() - before[i]) * params[i].grad()).sum().item<float>();
  before.clear();
  step();  // the steady-state step (moments exist) compiles here, not in the timed loop
  KilnCounters k;
  for (auto _ : state) step();
  k.report(state);
  set_floor_counters(state, 7.0 * 4 * kParams * kElems, 0, check);
}
BENCHMARK(BM_AdamStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// One training step of an MLP 784-512-512-10 (Linear, LayerNorm, GELU twice, then Linear), batch
// 256, cross-entropy, Adam; the same model as perf/first_step.cpp. Flops floor: the matmuls only,
// 2 * B * (784*512 + 512*512 + 512*10) per pass, times 3 (forward, and the backward's two
// products per layer). check: the loss of the second step, which depends on the first step's
// gradients and Adam update.

static void BM_MlpStep(benchmark::State& state) {
  constexpr int64_t B = 256;
  torch::manual_seed(0);
  BenchMlp net;
  auto x = torch::randn({B, 784});
  auto y = torch::randint(0, 10, {B});
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto step = [&] {
    adam.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    adam.step();
    settle();
    benchmark::DoNotOptimize(loss);
    return loss;
  };
  step();                                     // compiles the first step's kernels
  const float check = step().item<float>();   // and the steady state's (Adam's moments exist)
  KilnCounters k;
  for (auto _ : state) step();
  k.report(state);
  set_floor_counters(state, 0, 2.0 * B * (784 * 512 + 512 * 512 + 512 * 10) * 3, check);
}
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// The machine's limits, measured in the same run as the workloads they bound: sgemm (both sides
// call OpenBLAS's cblas_sgemm for a float32 mm) and the triad's memory bandwidth.
static void BM_Sgemm(benchmark::State& state) {
  constexpr int64_t N = 1024;
  torch::manual_seed(0);
  auto a = torch::randn({N, N}), b = torch::randn({N, N});
  settle();
  const float check = torch::mm(a, b).abs().mean().item<float>();
  KilnCounters k;
  for (auto _ : state) {
    auto c = torch::mm(a, b);
    settle();
    benchmark::DoNotOptimize(c);
  }
  k.report(state);
  const double flops = 2.0 * N * N * N;
  set_floor_counters(state, 0, flops, check);
  state.counters["GFLOPS"] = benchmark::Counter(flops * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Sgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

static void BM_Triad1(benchmark::State& state) { triad(state, 1); }
static void BM_Triad2(benchmark::State& state) { triad(state, 2); }
BENCHMARK(BM_Triad1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
