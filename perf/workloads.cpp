// The workloads of the side-by-side table (`kiln bench`, issue 5) and the machine's limits that
// bound them, written once, libtorch-style, and built three times: into `kiln bench` (kiln side,
// in-process), into perf/bench_workloads (kiln) and into perf/bench_workloads_libtorch (libtorch
// 1.13, which `kiln bench` spawns). No main here: each program brings its own.
// Each workload sets counters from which a floor is computed:
//   bytes  - a lower bound on the bytes one iteration must move to and from memory;
//   flops  - the floating-point operations one iteration must do (matmuls and convolutions);
//   check  - a value computed once, outside the timed loop, from the same seeded inputs: kiln
//            and libtorch draw the same random numbers, so the two sides must agree (`kiln
//            bench` compares them; a row whose checks differ times a different computation).
// kiln also reports `launches` (kernels per iteration) and `compiled` (kernels built inside the
// timed loop: it must be 0, or the row times the compiler).
#include <cmath>

#include "cli/models.h"
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

// The tanh form of GELU written as nine elementwise ops on 4M floats. Bytes floor: read x, write y.
static torch::Tensor gelu_chain(const torch::Tensor& x) {
  auto x3 = x * x * x;
  auto inner = (x + x3 * 0.044715) * 0.7978845608;
  return (x * 0.5) * (torch::tanh(inner) + 1.0);
}

static void BM_GeluChain(benchmark::State& state) {
  const int64_t n = int64_t(1) << 22;
  torch::manual_seed(0);
  auto x = torch::randn({n}, on_bench_device());
  auto step = [&] {
    auto y = gelu_chain(x);
    settle();
    benchmark::DoNotOptimize(y);
    return y;
  };
  const float check = step().mean().item<float>();  // compiles (or loads) the kernel
  KilnCounters k;
  for (auto _ : state) step();
  k.report(state);
  set_floor_counters(state, 2.0 * 4 * n, 0, check);
}
BENCHMARK(BM_GeluChain)->Unit(benchmark::kMillisecond)->UseRealTime();

// 2000 dependent ops on 8 floats, then one read: the per-op overhead, nothing else. No floor
// (32 bytes; the memory and flop floors are nanoseconds).
static void BM_TinyOps(benchmark::State& state) {
  constexpr int kOps = 2000;
  auto run = [] {
    auto x = torch::ones({8}, on_bench_device());
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
  state.counters["per_op_ns"] = benchmark::Counter(
      double(kOps) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_TinyOps)->Unit(benchmark::kMillisecond)->UseRealTime();

// LayerNorm over 1024 features then GELU, forward and backward, 512 rows. Bytes floor: read x and
// the incoming gradient, write x's gradient (the weights' 8 KB are noise): 3 * 512 * 1024 * 4 B.
static void BM_LayerNormGelu(benchmark::State& state) {
  constexpr int64_t N = 512, C = 1024;
  torch::manual_seed(0);
  auto x = torch::randn({N, C}, on_bench_device().requires_grad(true));
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({C}));
  ln->to(bench_device());
  auto grad = torch::randn({N, C}, on_bench_device());
  double check = 0;
  auto step = [&](bool read) {
    auto y = torch::gelu(ln->forward(x));
    y.backward(grad);
    settle();
    if (read) check = x.grad().abs().mean().item<float>();
    benchmark::DoNotOptimize(x.grad());
    x.mutable_grad() = torch::Tensor();
    ln->zero_grad();
  };
  step(true);
  step(false);  // the timed step's segment (it reads no check) compiles here
  KilnCounters k;
  for (auto _ : state) step(false);
  k.report(state);
  set_floor_counters(state, 3.0 * 4 * N * C, 0, check);
}
BENCHMARK(BM_LayerNormGelu)->Unit(benchmark::kMillisecond)->UseRealTime();

// Softmax cross-entropy, forward and backward, over 2048 rows of 1000 classes. Bytes floor: read
// the logits once and write their gradient once, 2 * 2048 * 1000 * 4 B = 16.4 MB (a fused
// implementation needs a second read of the logits unless a row stays in cache, which 4 KB rows
// do; labels are 16 KB).
static void BM_SoftmaxCrossEntropy(benchmark::State& state) {
  constexpr int64_t N = 2048, C = 1000;
  torch::manual_seed(0);
  auto logits = torch::randn({N, C}, on_bench_device().requires_grad(true));
  auto labels = torch::randint(0, C, {N}, on_bench_device().dtype(torch::kLong));
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
    auto p = torch::randn({256, 256}, on_bench_device().requires_grad(true));
    p.mutable_grad() = torch::randn({256, 256}, on_bench_device());
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
  for (int i = 0; i < kParams; ++i) check += ((params[i].detach() - before[i]) * params[i].grad()).sum().item<float>();
  before.clear();
  step();  // the steady-state step (moments exist) compiles here, not in the timed loop
  KilnCounters k;
  for (auto _ : state) step();
  k.report(state);
  set_floor_counters(state, 7.0 * 4 * kParams * kElems, 0, check);
}
BENCHMARK(BM_AdamStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// Times one training step of `net` on (x, y): zero_grad, cross-entropy, backward, an Adam step.
// Two steps run first, outside the timed loop: the first compiles its kernels, the second the
// steady state's (Adam's moments exist); check is the second step's loss. `flops` is the floor.
template <typename Net>
void time_training_step(benchmark::State& state, Net& net, const torch::Tensor& x, const torch::Tensor& y,
                        double flops) {
  torch::optim::Adam adam(net.parameters(), torch::optim::AdamOptions(1e-3));
  auto step = [&]() -> torch::Tensor {
    adam.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(x), y);
    loss.backward();
    adam.step();
    settle();
    benchmark::DoNotOptimize(loss);
    return loss;
  };
  step();
  const torch::Tensor second = step();
  const float check = second.item<float>();
  KilnCounters k;
  for (auto _ : state) step();
  k.report(state);
  set_floor_counters(state, 0, flops, check);
}

// One training step of an MLP 784-512-512-10 (Linear, LayerNorm, GELU twice, then Linear), batch
// 256, cross-entropy, Adam; the same model as perf/first_step.cpp. Flops floor: the matmuls only,
// forward F = 2 * B * (784*512 + 512*512 + 512*10), backward F for the weights' gradients and F
// minus the first layer for the inputs' (the batch needs no gradient; until the fifteenth session
// the floor counted that product too, 3 F in all).
static void BM_MlpStep(benchmark::State& state) {
  constexpr int64_t B = 256;
  torch::manual_seed(0);
  BenchMlp net;
  net->to(bench_device());
  auto x = torch::randn({B, 784}, on_bench_device());
  auto y = torch::randint(0, 10, {B}, on_bench_device().dtype(torch::kLong));
  const double first = 2.0 * B * 784 * 512, forward = first + 2.0 * B * (512 * 512 + 512 * 10);
  time_training_step(state, *net, x, y, 3 * forward - first);
}
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// One training step of `kiln train --model cnn` (cli/models.h: two 3x3 convolutions with batch
// norm, ReLU and max pooling, then two Linear layers), batch 64, cross-entropy, Adam. Flops floor:
// the convolutions and matmuls, forward F, backward F for the weights' gradients and F minus the
// first convolution for the inputs' (the images need no gradient).
static void BM_CnnStep(benchmark::State& state) {
  constexpr int64_t B = 64;
  torch::manual_seed(0);
  auto net = fashion::make_cnn();
  net->to(bench_device());
  auto x = torch::randn({B, 1, 28, 28}, on_bench_device());
  auto y = torch::randint(0, 10, {B}, on_bench_device().dtype(torch::kLong));
  const double conv1 = 2.0 * B * 32 * 9 * 28 * 28, conv2 = 2.0 * B * 64 * 32 * 9 * 14 * 14;
  const double linear = 2.0 * B * (64 * 7 * 7 * 128 + 128 * 10);
  const double forward = conv1 + conv2 + linear;
  time_training_step(state, *net, x, y, 3 * forward - conv1);
}
BENCHMARK(BM_CnnStep)->Unit(benchmark::kMillisecond)->UseRealTime();

// The machine's limits, measured in the same run as the workloads they bound: sgemm (both sides
// call OpenBLAS's cblas_sgemm for a float32 mm) and the triad's memory bandwidth.
static void BM_Sgemm(benchmark::State& state) {
  constexpr int64_t N = 1024;
  torch::manual_seed(0);
  auto a = torch::randn({N, N}, on_bench_device()), b = torch::randn({N, N}, on_bench_device());
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

// On a GPU the limit is the device's own: a copy-like pass over 64 MiB (y = -x, read once and
// written once; kiln's copy_ would only share the value). The host's triad bounds nothing there.
static void device_copy(benchmark::State& state) {
  const int64_t n = int64_t(1) << 24;
  auto x = torch::randn({n}, on_bench_device());
  settle();
  for (auto _ : state) {
    auto y = -x;
    settle();
    benchmark::DoNotOptimize(y);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * 4 * n);
}
static void BM_Triad1(benchmark::State& state) {
  if (bench_device().is_cuda()) return device_copy(state);
  triad(state, 1);
}
static void BM_Triad2(benchmark::State& state) {
  if (bench_device().is_cuda()) return device_copy(state);
  triad(state, 2);
}
BENCHMARK(BM_Triad1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad2)->Unit(benchmark::kMillisecond)->UseRealTime();
