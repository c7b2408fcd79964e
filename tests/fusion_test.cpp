// What fusion promises, counted: kernel launches per program, and no new kernels when only sizes
// or scalar values change. Run on the Halide backend whatever KILN_BACKEND says.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "fusion/partition_cache.h"
#include "runtime/config.h"

namespace {

// Compiled kernels, each built before it runs (whatever KILN_COMPILE says), so launches count kernels.
struct HalideBackend {
  HalideBackend() : saved(kiln::config()) {
    kiln::config().backend = "halide";
    kiln::config().compile_in_background = false;
  }
  ~HalideBackend() { kiln::config() = saved; }
  kiln::Config saved;
};

// Launches (and compiles) made by `f`, counted from a clean segment.
template <typename F>
kiln::Stats count(F&& f) {
  kiln::sync();
  kiln::reset_stats();
  f();
  kiln::sync();
  return kiln::stats();
}

// `values()` on the Halide backend, then on the interpreter: {fused, reference}. The caller holds
// a HalideBackend, which restores the configuration.
template <typename F>
auto fused_and_reference(F&& values) {
  kiln::config().backend = "halide";
  auto fused = values();
  kiln::config().backend = "interp";
  auto reference = values();
  kiln::config().backend = "halide";
  return std::make_pair(std::move(fused), std::move(reference));
}

torch::Tensor gelu_chain(const torch::Tensor& x) {  // the tanh form, nine elementwise ops
  auto x3 = x * x * x;
  auto inner = (x + x3 * 0.044715) * 0.7978845608;
  return (x * 0.5) * (torch::tanh(inner) + 1.0);
}

// A loss's value, then its input's gradient, flattened.
std::vector<float> loss_and_gradient(const torch::Tensor& loss, const torch::Tensor& input) {
  std::vector<float> out = loss.reshape({1}).to_vector<float>();
  auto g = input.grad().to_vector<float>();
  out.insert(out.end(), g.begin(), g.end());
  return out;
}

// Each value within `tolerance` (relative, plus as much absolute), NaN where the reference has
// NaN and infinities exactly; `what` names the case in a failure.
void expect_near_all(const std::vector<float>& fused, const std::vector<float>& reference, double tolerance = 1e-5,
                     const std::string& what = "") {
  ASSERT_EQ(fused.size(), reference.size()) << what;
  for (size_t i = 0; i < fused.size(); ++i) {
    if (std::isnan(reference[i]))
      EXPECT_TRUE(std::isnan(fused[i])) << what << " value " << i;
    else if (std::isinf(reference[i]))
      EXPECT_EQ(fused[i], reference[i]) << what << " value " << i;
    else
      EXPECT_NEAR(fused[i], reference[i], tolerance * (1 + std::fabs(reference[i]))) << what << " value " << i;
  }
}

// The tensors' values (as float32), one tensor after another.
std::vector<float> values_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<float> values;
  for (const auto& t : tensors) {
    auto v = t.to(torch::kFloat).to_vector<float>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

}  // namespace

TEST(Fusion, GeluChainOfNineOpsIsOneKernel) {
  HalideBackend halide;
  auto x = torch::randn({1000});
  torch::Tensor y;
  auto s = count([&] { y = gelu_chain(x); });
  EXPECT_EQ(s.kernel_launches, 1);
  // Nine ops, and the four constants unless an earlier test in this process left them in the
  // reused-constant cache (detail::constant).
  EXPECT_GE(s.ops_traced, 9);
  EXPECT_LE(s.ops_traced, 13);
  auto expected = 0.5 * x * (1 + torch::tanh(0.7978845608 * (x + 0.044715 * x.pow(3))));
  EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6));
}

TEST(Fusion, LayerNormGeluForwardBackwardIsAtMostSixKernels) {
  HalideBackend halide;
  torch::manual_seed(0);
  auto x = torch::randn({64, 128}, torch::requires_grad());
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({128}));
  auto grad = torch::randn({64, 128});
  auto s = count([&] { torch::gelu(ln->forward(x)).backward(grad); });
  EXPECT_LE(s.kernel_launches, 6);
  EXPECT_TRUE(x.grad().defined() && ln->weight.grad().defined() && ln->bias.grad().defined());
}

TEST(Fusion, AdamStepOverManyParametersIsAFewKernels) {
  HalideBackend halide;
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 40; ++i) params.push_back(torch::randn({16, 16}, torch::requires_grad()));
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1e-3));
  for (auto& p : params) p.mutable_grad() = torch::randn({16, 16});
  auto s = count([&] { adam.step(); });
  EXPECT_LE(s.kernel_launches, 4);
}

// Independent updates over one flat domain (an optimizer step's parameters of one shape) share a
// kernel, each in its own loop within chunks of the domain (codegen/halide/schedule.cpp). At sizes
// below, at and past a chunk and a vector (8 or 16 lanes), every element matches the interpreter's.
TEST(Fusion, IndependentUpdatesInOneKernelMatchTheInterpreterAtEverySize) {
  HalideBackend halide;
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 512, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 9, 70001}) {
    int64_t launches = 0;
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(1);
      std::vector<torch::Tensor> params, moments, grads;
      for (int i = 0; i < 3; ++i) {
        params.push_back(torch::randn({n}));
        moments.push_back(torch::randn({n}).abs());
        grads.push_back(torch::randn({n}));
      }
      kiln::sync();
      const auto stats = count([&] {
        for (int i = 0; i < 3; ++i) {
          moments[i] = moments[i] * 0.99 + grads[i] * grads[i] * 0.01;
          params[i] = params[i] - grads[i] / (torch::sqrt(moments[i]) + 1e-8) * 1e-3;
        }
      });
      if (kiln::config().backend == "halide") launches = stats.kernel_launches;
      params.insert(params.end(), moments.begin(), moments.end());
      return values_of(params);
    });
    expect_near_all(fused, reference, 1e-5, std::to_string(n) + " elements");
    EXPECT_EQ(launches, 1) << n << " elements";
  }
}

// A long chain of elementwise ops is cut into kernels of bounded size (fusion/partition.cpp,
// kGroupNodes): as one kernel, 2000 ops took Halide a minute to compile. Kernels of the same
// structure compile once, and the result is the interpreter's.
TEST(Fusion, LongChainsAreCutIntoKernelsOfBoundedSize) {
  HalideBackend halide;
  auto chain = [] {
    auto x = torch::arange(8).to(torch::kFloat) - 3.0;
    for (int i = 0; i < 500; ++i) x = torch::relu(x * 1.0001 + 0.0001) * 0.9999 - 0.00005;
    return x.to_vector<float>();
  };
  chain();  // compiles
  kiln::Stats s;
  std::vector<float> fused;
  s = count([&] { fused = chain(); });
  // 500 steps of five nodes (a relu is a compare and a select) in kernels of at most 256.
  EXPECT_GE(s.kernel_launches, 2500 / 256);
  EXPECT_LE(s.kernel_launches, 2 * 2500 / 128);
  auto [again, reference] = fused_and_reference(chain);
  EXPECT_EQ(again, fused);
  // Each step's x * 1.0001 + 0.0001 is one fma in a kernel and two roundings in the interpreter:
  // the results drift apart by up to half an ulp a step, 500 * 2^-24 relative at most.
  expect_near_all(fused, reference, 3e-5);
}

// A float product of computed values added in a kernel is rounded once, with the sum
// (codegen/halide/ops.cpp, add_contracted), as GCC and CUDA compile a * b + c: with u = 2 + 2^-11,
// u^2 = 4 + 2^-9 + 2^-22, whose last term a rounded product drops. The interpreter rounds the
// product first, and so does a kernel whose factor is read from memory (x * x). Negation flips
// the sign of zeros, as the interpreter's (it computed 0 - x, giving +0 for +0).
TEST(Fusion, ProductsAddedInAKernelAreRoundedOnce) {
  auto run = [](const std::string& backend) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    const float a = 1 + std::ldexp(1.0f, -12), c = 4 + std::ldexp(1.0f, -9);
    std::vector<float> data(64, a);  // an input, not a constant that folding would compute
    auto x = torch::from_blob(data.data(), {64}, torch::kFloat).clone();
    auto u = x * 2.0;
    auto sums = values_of({u * u - c, -c + u * u, c - u * u, -(x * 0.0), x * x - (1 + std::ldexp(1.0f, -11))});
    kiln::config().backend = saved;
    return sums;
  };
  const auto fused = run("halide"), reference = run("interp");
  const float low = std::ldexp(1.0f, -22);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(reference[i], 0.0f);
    EXPECT_EQ(fused[i], low);
    EXPECT_EQ(fused[64 + i], low);
    EXPECT_EQ(fused[128 + i], -low);
    EXPECT_TRUE(fused[192 + i] == 0.0f && std::signbit(fused[192 + i])) << fused[192 + i];
    EXPECT_TRUE(std::signbit(reference[192 + i]));
    EXPECT_EQ(fused[256 + i], reference[256 + i]);
  }
}

// A recurrence with an output every step: the values later outputs share nest one level per
// step, and all but the last few levels are computed in loops of their own (codegen/halide/
// schedule.cpp, kLevelsPerVector). Over a 2-D domain (a broadcast row) large enough to run in
// parallel, the result is the interpreter's.
TEST(Fusion, RecurrencesWithAnOutputEveryStepMatchTheInterpreter) {
  HalideBackend halide;
  auto program = [] {
    auto acc = torch::arange(300 * 257).to(torch::kFloat).reshape({300, 257}) * 1e-5;
    auto row = torch::arange(257).to(torch::kFloat) * 0.01;
    std::vector<torch::Tensor> steps;  // read after the loop: one segment, one kernel
    for (int k = 0; k < 8; ++k) {
      acc = torch::exp(-acc * acc) * 0.5 + acc * 0.9 + row * (k % 3);
      steps.push_back(acc);
    }
    return values_of(steps);
  };
  auto [fused, reference] = fused_and_reference(program);
  expect_near_all(fused, reference);
}

TEST(Fusion, NewBatchSizeOrLearningRateCompilesNothing) {
  HalideBackend halide;
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(20, 32), torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})),
                            torch::nn::GELU(), torch::nn::Linear(32, 5));
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  auto step = [&](int64_t batch, double lr) {
    for (auto& group : adam.param_groups()) group.options().set_lr(lr);
    auto x = torch::randn({batch, 20});
    auto y = torch::randint(0, 5, {batch});
    adam.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    adam.step();
    return loss.item<float>();
  };
  // Batch sizes equal to no parameter dimension: independent elementwise work over equal shapes
  // is merged into one kernel, so a batch that makes activations and parameters the same shape
  // (here 20 or 32) partitions differently, and compiles once more.
  step(24, 1e-2);  // compiles
  step(24, 1e-2);  // the steady state (gradients now exist: zero_grad takes another path)
  auto s = count([&] {
    step(48, 3e-3);
    step(17, 1e-3);
  });
  EXPECT_EQ(s.kernels_compiled + s.kernels_loaded, 0);
  EXPECT_GT(s.kernel_launches, 0);
}

// Row maxima and minima run in vectors with a scalar tail (codegen/halide/reduction.cpp); NaN must win
// wherever it sits, -inf rows stay -inf, and rows shorter than a vector work too.
TEST(Fusion, RowMaxAndMinInVectorsMatchTheInterpreter) {
  for (int64_t width : {1000, 37, 5}) {
    std::vector<float> data(size_t(4 * width));
    for (size_t i = 0; i < data.size(); ++i) data[i] = float((i * 7919) % 1013) - 500.0f;
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    data[size_t(width / 2)] = nan;                                           // row 0: NaN in a whole vector
    data[size_t(2 * width - 1)] = nan;                                       // row 1: NaN in the tail
    for (int64_t i = 0; i < width; ++i) data[size_t(2 * width + i)] = -inf;  // row 2: all -inf
    data[size_t(3 * width + width - 1)] = 1e6f;                              // row 3: the maximum last
    auto run = [&](const std::string& backend) {
      const std::string saved = kiln::config().backend;
      kiln::config().backend = backend;
      torch::Tensor x = torch::from_blob(data.data(), {4, width}, torch::kFloat).clone();
      auto out = torch::cat({x.amax(1), x.amin(1), (x * 2).amax(1)}).to_vector<float>();
      kiln::config().backend = saved;
      return out;
    };
    const auto fused = run("halide"), reference = run("interp");
    ASSERT_EQ(fused.size(), reference.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      if (std::isnan(reference[i]))
        EXPECT_TRUE(std::isnan(fused[i])) << "width " << width << " value " << i;
      else
        EXPECT_EQ(fused[i], reference[i]) << "width " << width << " value " << i;
    }
    EXPECT_TRUE(std::isnan(reference[0]) && std::isnan(reference[1]));
    EXPECT_EQ(reference[2], -inf);
    EXPECT_EQ(reference[3], 1e6f);
  }
}

// A reduction to one value runs its steps (two vectors: 32 floats with AVX-512, 16 with AVX2) in
// chunks of 1024 steps (in parallel from 65536 elements), then the scalar tail: sizes on either
// side of each boundary for both step widths, sum (two in one kernel), max with a NaN and min,
// against the interpreter; one kernel each.
TEST(Fusion, ReductionsToOneValueMatchTheInterpreterAtEverySize) {
  HalideBackend halide;
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 17, 32 * 1024 - 1, 32 * 1024,
                    32 * 1024 + 33, 65536 + 3, 300001}) {
    std::vector<float> data(static_cast<size_t>(n));
    for (size_t i = 0; i < data.size(); ++i) data[i] = float((i * 7919) % 1013) / 100 - 5;
    if (n > 20000) data[size_t(n - 20000)] = std::numeric_limits<float>::quiet_NaN();
    int64_t launches = 0;
    const auto [fused, reference] = fused_and_reference([&] {
      torch::Tensor x = torch::from_blob(data.data(), {n}, torch::kFloat).clone();
      kiln::sync();
      std::vector<float> out;
      const auto stats = count([&] {
        auto y = x * 0.5;
        out = torch::stack({y.sum() + (y * y).mean(), x.max(), x.min(), x.abs().sum()}).to_vector<float>();
      });
      if (kiln::config().backend == "halide") launches = stats.kernel_launches;
      return out;
    });
    ASSERT_EQ(fused.size(), reference.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      if (std::isnan(reference[i]))
        EXPECT_TRUE(std::isnan(fused[i])) << n << " elements, value " << i;
      else
        EXPECT_NEAR(fused[i], reference[i], 1e-5 * (1 + std::fabs(reference[i]))) << n << " elements, value " << i;
    }
    EXPECT_EQ(std::isnan(reference[1]), n > 20000);
    EXPECT_LE(launches, 3) << n << " elements";
  }
}

// The same over views that do not flatten to one run (transposed, expanded), whose chunks are rows
// of the outer dim: sum, mean, max with a NaN, any and all (not in lanes), at row counts around a
// chunk's. Expanded tensors' float sums stay within 1e-4 of the interpreter's double sums (summed
// in one pass, 150K elements of randn(3) were 1.6e-3 off).
TEST(Fusion, ReductionsToOneValueOfViewsMatchTheInterpreter) {
  HalideBackend halide;
  for (auto [rows, width] : {std::pair<int64_t, int64_t>{5, 7}, {3, 50000}, {4099, 17}, {70001, 5}}) {
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(9);
      auto a = torch::randn({rows, width})
                   .masked_fill(torch::arange(rows * width).reshape({rows, width}) == rows / 2 * width + width / 2,
                                std::numeric_limits<float>::quiet_NaN());
      auto e = torch::randn({width}).reshape({1, width}).expand({rows, width});
      auto t = a.t();
      auto out = torch::stack({(t * 2).sum(), t.amax(), (t > 1.0).any().to(torch::kFloat),
                               (t < 100.0).all().to(torch::kFloat), e.t().sum(), (e.t() * 0.5).mean(),
                               torch::randn({rows}).reshape({rows, 1}).expand({rows, width}).t().sum()})
                     .to_vector<float>();
      return out;
    });
    ASSERT_EQ(fused.size(), reference.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      if (std::isnan(reference[i]))
        EXPECT_TRUE(std::isnan(fused[i])) << rows << "x" << width << " value " << i;
      else
        EXPECT_NEAR(fused[i], reference[i], (i >= 4 ? 1e-4 : 1e-5) * (1 + std::fabs(reference[i])))
            << rows << "x" << width << " value " << i;
    }
  }
}

// Pooling windows are narrow rows (codegen/halide: their extents compiled in, the window unrolled,
// 8- or 4-wide vectors along the pooled width, the last shifted inwards); the gradients write
// through tiny inner dims (interleaved stores). Widths around both vector sizes, tiles (2x2) and
// overlapping windows (3x3 stride 2), ties (the gradient to the first maximum), NaN and -inf,
// against the interpreter: forward values and the input's gradient. Then reductions of three
// short dims in two orders, whose kernels differ only in which dims are compiled in.
TEST(Fusion, PoolingWindowsMatchTheInterpreter) {
  HalideBackend halide;
  for (int64_t width : {4, 6, 7, 8, 15, 16, 17, 28, 33}) {
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(5);
      auto x = (torch::randn({2, 3, 6, width}) * 2).to(torch::kLong).to(torch::kFloat);  // ties in many windows
      x = x.masked_fill(torch::arange(x.numel()).reshape(x.sizes()) == 7, std::numeric_limits<float>::quiet_NaN());
      x = x.masked_fill(torch::arange(x.numel()).reshape(x.sizes()) == 40, -std::numeric_limits<float>::infinity());
      x.requires_grad_(true);
      auto tiles = torch::max_pool2d(x, 2);
      auto overlapping = torch::max_pool2d(x, 3, 2, 1);
      auto average = torch::avg_pool2d(x, 2);
      ((tiles * 1.5).sum() + (overlapping * 0.5).sum() + average.sum()).backward();
      return values_of({tiles, overlapping, average, x.grad()});
    });
    expect_near_all(fused, reference, 1e-5, "width " + std::to_string(width));
  }
  {  // Enough windows for several parallel tasks (kTaskElements each), the last one partial.
    const auto [fused, reference] = fused_and_reference([] {
      torch::manual_seed(6);
      auto x = (torch::randn({8, 16, 30, 28}) * 2).to(torch::kLong).to(torch::kFloat).requires_grad_(true);
      auto tiles = torch::max_pool2d(x, 2);
      (tiles * tiles).sum().backward();
      return values_of({tiles, x.grad()});
    });
    expect_near_all(fused, reference, 1e-5, "many windows");
  }
  // [16, 12, 3, 2] and [16, 3, 12, 2] reduced over their last three dims: 3 and 2 are compiled
  // into the first kernel, 2 alone into the second (12 is too long), so their keys must differ.
  const auto [fused, reference] = fused_and_reference([] {
    std::vector<torch::Tensor> results;
    for (auto sizes : {std::vector<int64_t>{2, 3, 12, 16}, std::vector<int64_t>{2, 12, 3, 16}}) {
      auto x = (torch::arange(2 * 3 * 12 * 16).to(torch::kFloat) * 0.013).sin().reshape(sizes).permute({3, 2, 1, 0});
      results.push_back(x.sum({1, 2, 3}));
      results.push_back(x.amax({1, 2, 3}));
    }
    return values_of(results);
  });
  expect_near_all(fused, reference);
}

// Column sums (the innermost dim kept) add their rows in blocks of 64, then the blocks
// (codegen/halide/reduction.cpp, kColumnBlock): a float32 sum down 5000 rows stays within 1e-4 of the
// float64 sum (row after row, it was 2.7e-4 off), and maxima, minima and sums over row counts
// around the block size, with a NaN in the last partial block, match the interpreter.
TEST(Fusion, ColumnReductionsAddInBlocks) {
  HalideBackend halide;
  torch::manual_seed(3);
  auto x = torch::randn({5000, 31});
  const auto sums = x.sum({0}).to_vector<float>();
  const auto exact = x.to(torch::kDouble).sum({0}).to_vector<double>();
  for (size_t i = 0; i < sums.size(); ++i) EXPECT_NEAR(sums[i], exact[i], 1e-4) << "column " << i;
  for (int64_t rows : {1, 63, 64, 65, 130, 1000}) {
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(4);
      auto y = torch::randn({rows, 3, 40});
      y = y.masked_fill(torch::arange(y.numel()).reshape(y.sizes()) == y.numel() - 7,
                        std::numeric_limits<float>::quiet_NaN());
      return values_of({y.sum({0}), y.amax({0, 1}), y.amin({0}), (y * 2).sum({0, 1})});
    });
    expect_near_all(fused, reference, 1e-4, std::to_string(rows) + " rows");
  }
  // Two-dimensional domains take their blocks of rows in parallel, in runs of up to 2048 columns
  // (codegen/halide: kColumnRun), several blocks to a task: widths around a run, narrow columns
  // whose tasks end in a partial one, and two sums in one pass (LayerNorm's weight gradients).
  for (auto [rows, columns] :
       {std::pair<int64_t, int64_t>{65, 2049}, {130, 4100}, {3, 2048}, {200, 17}, {640, 1}, {70000, 2}, {3000, 100}}) {
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(6);
      auto a = torch::randn({rows, columns}), b = torch::randn({rows, columns});
      return values_of({(a * b).sum({0}), b.sum({0}), (a - 1).sum({0}, true)});
    });
    expect_near_all(fused, reference, 1e-4, std::to_string(rows) + " x " + std::to_string(columns));
  }
  // Products stay row after row: a zero in the first block and an overflow in the second give 0,
  // not 0 * inf.
  const auto [fused, reference] = fused_and_reference([] {
    auto x = torch::ones({128, 8});
    x.narrow(0, 0, 1).fill_(0.0);
    x.narrow(0, 64, 64).fill_(1e10);
    return values_of({x.prod(0), x.to(torch::kDouble).prod(0)});
  });
  expect_near_all(fused, reference);
  EXPECT_EQ(fused[0], 0.0f);
}

// From 65536 elements, kernels over rows run in parallel tasks of several rows (codegen/halide:
// parallel_tasks), the last task shorter: pointwise kernels with a broadcast operand, row and
// column sums, a row kernel (softmax) and kernels reading a transposed view (in tiles) at row
// counts that leave partial tasks and tiles, against the interpreter.
TEST(Fusion, RowsInParallelTasksAndTilesMatchTheInterpreter) {
  HalideBackend halide;
  for (auto [rows, width] : {std::pair<int64_t, int64_t>{1000, 67}, {4099, 17}, {3, 40000}, {70000, 1}}) {
    const auto [fused, reference] = fused_and_reference([&] {
      torch::manual_seed(5);
      auto a = torch::randn({rows, width}), b = torch::randn({width}), c = torch::randn({rows, 1});
      auto e = (a - a.amax({1}, true)).exp();
      auto out = torch::cat({(a + b).reshape({-1}), (a * c).reshape({-1}), a.sum({1}), a.sum({0}),
                             (e / e.sum({1}, true)).reshape({-1}), (a.t() + b.reshape({width, 1})).reshape({-1}),
                             (a.t() * 2).contiguous().reshape({-1})})
                     .to_vector<float>();
      return out;
    });
    ASSERT_EQ(fused.size(), reference.size());
    int reported = 0;
    for (size_t i = 0; i < fused.size(); ++i)
      if (std::fabs(fused[i] - reference[i]) > 1e-4 * (1 + std::fabs(reference[i])) && reported++ < 5)
        ADD_FAILURE() << rows << "x" << width << " value " << i << ": " << fused[i] << " vs " << reference[i];
  }
}

// logsumexp reduces each row twice (its max, then the sum of exp(x - max)): one row kernel, each
// row read once (fusion/partition.cpp), in vectors or not, over one reduced dim or two.
TEST(Fusion, LogSumExpIsOneRowKernelThatMatchesTheInterpreter) {
  HalideBackend halide;  // counts compiled launches; run() switches to the interpreter and back
  struct Case {
    std::vector<int64_t> shape;
    bool transposed;  // reduce dims 1 and 2 of x.transpose(1, 2): two reduced dims, not mergeable
  };
  for (const Case& c : {Case{{64, 1000}, false}, Case{{64, 37}, false}, Case{{8, 5}, false}, Case{{4, 6, 7}, true}}) {
    auto run = [&](const std::string& backend, kiln::Stats* stats) {
      const std::string saved = kiln::config().backend;
      kiln::config().backend = backend;
      torch::manual_seed(3);
      torch::Tensor x = torch::randn(c.shape) * 5;
      torch::Tensor y;
      auto s = count([&] {
        y = c.transposed ? x.transpose(1, 2).logsumexp({1, 2}) : x.logsumexp({int64_t(c.shape.size()) - 1});
      });
      if (stats) *stats = s;
      auto out = y.to_vector<float>();
      kiln::config().backend = saved;
      return out;
    };
    kiln::Stats fused_stats;
    const auto fused = run("halide", &fused_stats), reference = run("interp", nullptr);
    EXPECT_EQ(fused_stats.kernel_launches, 1) << "shape " << c.shape.size() << "-d, " << c.shape.back();
    ASSERT_EQ(fused.size(), reference.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], reference[i], 1e-5 * (1 + std::fabs(reference[i])));
  }
}

// A row kernel that writes one value per element: softmax's max, sum and output, and LayerNorm's
// mean, variance and output, each one pass over the rows (fusion/partition.cpp).
TEST(Fusion, SoftmaxAndLayerNormForwardAreOneKernelEach) {
  HalideBackend halide;  // counts compiled launches; run() switches to the interpreter and back
  auto run = [](const std::string& backend, kiln::Stats* softmax_stats, kiln::Stats* norm_stats) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    torch::manual_seed(4);
    torch::NoGradGuard no_grad;
    torch::Tensor x = torch::randn({48, 300}) * 3 + 1;
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({300}));
    torch::Tensor s, y;
    *softmax_stats = count([&] { s = torch::softmax(x, 1); });
    *norm_stats = count([&] { y = ln->forward(x); });
    auto out = torch::cat({s.flatten(), y.flatten()}).to_vector<float>();
    kiln::config().backend = saved;
    return out;
  };
  kiln::Stats softmax_fused, norm_fused, unused;
  const auto fused = run("halide", &softmax_fused, &norm_fused), reference = run("interp", &unused, &unused);
  EXPECT_EQ(softmax_fused.kernel_launches, 1);
  EXPECT_EQ(norm_fused.kernel_launches, 1);
  ASSERT_EQ(fused.size(), reference.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], reference[i], 1e-5 * (1 + std::fabs(reference[i])));
}

// KILN_COMPILE=background: a kernel not built yet runs unfused, on the per-op kernels, while it
// compiles on another thread, every step gives the same result, and a later step launches the
// built kernels.
TEST(Fusion, BackgroundCompilationServesStepsUntilKernelsAreBuilt) {
  HalideBackend halide;
  struct Background {
    Background() { kiln::config().compile_in_background = true; }
    ~Background() { kiln::config().compile_in_background = false; }
  } background;
  torch::manual_seed(6);
  auto x = torch::randn({32, 48}), w = torch::randn({48, 40});
  auto program = [&] { return (((x.sin() + 1.5) * x).matmul(w).cos() * 3 - x.sum()).to_vector<float>(); };
  std::vector<float> expected;
  {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = "interp";
    expected = program();
    kiln::config().backend = saved;
  }
  bool built = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!built && std::chrono::steady_clock::now() < deadline) {
    std::vector<float> got;
    auto s = count([&] { got = program(); });
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4 * (1 + std::fabs(expected[i])));
    // Built: each kernel one launch (unfused, one per node).
    built = s.kernels_compiled == 0 && s.kernel_launches <= 4;
    if (!built) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(built);
}

// Float32 exp is computed in vectors (codegen/halide/ops.cpp, vector_exp) up to the largest x
// whose exp is finite (it stopped at 88 before: exp(88.6) came out as exp(88)).
// x != x is how programs find NaN; Halide's simplifier folds a value compared with itself
// (codegen/halide/ops.cpp keeps the NaN answer), in float32 and float64, as the interpreter.
TEST(Fusion, AValueComparedWithItselfKeepsNaNApart) {
  HalideBackend halide;
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const auto [fused, reference] = fused_and_reference([&] {
      const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
      auto x = torch::tensor(std::vector<double>{1, nan, -inf, 0, nan}).to(dtype) * 2.0;
      return values_of({x != x, x == x, x <= x, x >= x, x<x, x> x});
    });
    EXPECT_EQ(fused, reference);
    EXPECT_EQ(std::vector<float>(fused.begin(), fused.begin() + 5), (std::vector<float>{0, 1, 0, 0, 1}));
  }
}

// NaN compares false with everything but != (x <= 0 compiled as !(0 < x) was true for NaN, so a
// fused relu, where(x <= 0, 0, x), turned NaN into 0 where libtorch and the interpreter keep it).
TEST(Fusion, ComparisonsWithNaNMatchTheInterpreter) {
  HalideBackend halide;
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const auto [fused, reference] = fused_and_reference([&] {
      const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
      auto x = torch::tensor(std::vector<double>{nan, -inf, -1, -0.0, 0, 2, inf, nan, 3}).to(dtype) * 1.0;
      auto y = torch::tensor(std::vector<double>{0, 0, nan, 0, -0.0, 2, inf, nan, 1}).to(dtype) * 1.0;
      return values_of({x <= y, x >= y, x<y, x> y, x == y, x != y, x <= 0, x >= 0, torch::relu(x)});
    });
    expect_near_all(fused, reference, 0);
    EXPECT_TRUE(std::isnan(fused[fused.size() - 9]));  // relu(NaN), the first of relu's nine
    EXPECT_EQ(fused.back(), 3.0f);                     // relu(3), the last
  }
}

// NaN == x is false and NaN != x true in every shape a kernel takes: a one-element kernel (a
// scalar compare) gave NaN == 0 true, while vectors were right. Lengths 1 to 40 put NaN in whole
// vectors, shifted tails and scalar loops; a row kernel's tail compares one element at a time.
TEST(Fusion, EqualityWithNaNIsFalseInEveryShape) {
  HalideBackend halide;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE((torch::tensor({NAN}) == 0).item<bool>());
  EXPECT_TRUE((torch::tensor({NAN}) != 0).item<bool>());
  EXPECT_FALSE((torch::tensor(nan) == 0.0).item<bool>());
  for (auto dtype : {torch::kFloat, torch::kDouble})
    for (int64_t n = 1; n <= 40; ++n) {
      const auto [fused, reference] = fused_and_reference([&] {
        auto x = torch::full({n}, nan, dtype) * 1.0, y = torch::arange(n, dtype);
        auto rows = torch::full({3, n}, nan, dtype) + 0.0;
        return values_of({x == 0, x != 0, x == y, x != y, x == x, (rows == 1).sum(1), (rows != 1).sum(1)});
      });
      for (size_t i = 0; i < fused.size(); ++i) ASSERT_EQ(fused[i], reference[i]) << n << " elements, value " << i;
      ASSERT_EQ(reference[0], 0.0f);
      ASSERT_EQ(reference[size_t(n)], 1.0f);
    }
}

// NaN wins in maxima and minima of mixed precision: a reviewer's program (this data, in a process
// of its own) got -inf for a float64 amax over a size-1 dim fused with float32 reductions while
// NaN was tested with Halide's is_nan; with float64 NaN tested on the bits (codegen/halide/
// ops.cpp, is_nan_value) it gets NaN. In this test's process the old lowering passed too: this
// covers the case, it did not catch the failure.
TEST(Fusion, MaximaOfMixedPrecisionKeepNaN) {
  HalideBackend halide;
  for (int64_t columns : {1, 7}) {
    std::mt19937 generator(5);
    std::normal_distribution<float> normal;
    std::vector<float> data(static_cast<size_t>(columns));
    for (auto& v : data) v = normal(generator);
    data[size_t(columns / 2)] = std::numeric_limits<float>::quiet_NaN();
    data[0] = std::numeric_limits<float>::infinity();
    if (columns > 2) data[1] = -std::numeric_limits<float>::infinity();
    const auto [fused, reference] = fused_and_reference([&] {
      auto x = torch::from_blob(data.data(), {1, columns}, torch::kFloat).clone();
      auto xd = x.to(torch::kDouble);
      return values_of({x.sum({0}), x.amax({0}), x.amin({0}), xd.amax({0}), xd.amin({0}), x.prod(0),
                        x.reshape({1, 1, columns}).amax({0, 1})});
    });
    expect_near_all(fused, reference, 1e-5, std::to_string(columns) + " columns");
  }
}

// int64 arithmetic is exact on both backends (the interpreter's float64 path is not above 2^53)
// and wraps on overflow, as in PyTorch: sums, products, differences, extrema and comparisons of
// tensors whose values differ only in their last bits, and a float that no int64 holds (NaN) as
// INT64_MIN. (Scalars are float64 in the IR: `a > big` would compare with 2^53.) And int64 to
// float32 rounds once.
TEST(Fusion, Int64ArithmeticIsExactAndWraps) {
  HalideBackend halide;
  constexpr int64_t big = (int64_t(1) << 53) + 1, huge = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> data{big, -big, big + 2, 3, huge, -huge - 1, 7, 0}, bigs(4, big);
  const auto [fused, reference] = fused_and_reference([&] {
    auto a = torch::from_blob(data.data(), {2, 4}, torch::kLong).clone();
    auto b = a.narrow(0, 0, 1), c = torch::from_blob(bigs.data(), {4}, torch::kLong).clone();
    std::vector<int64_t> out;
    for (const auto& t :
         {(a + 1).reshape({-1}), (a * 3).reshape({-1}), a.sum({0}), a.sum(), (a - b).reshape({-1}), a.amax({1}),
          a.amin({1}), (a == a + 0).to(torch::kLong).reshape({-1}), (a > c).to(torch::kLong).reshape({-1}),
          (a == c).to(torch::kLong).reshape({-1}), torch::where(a > 3, a, -a).reshape({-1}),
          torch::full({1}, std::numeric_limits<float>::quiet_NaN()).to(torch::kLong)}) {
      const auto v = t.to_vector<int64_t>();
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  });
  EXPECT_EQ(fused, reference);
  ASSERT_GE(reference.size(), 8u);
  EXPECT_EQ(reference[0], big + 1);
  EXPECT_EQ(reference[4], std::numeric_limits<int64_t>::min());  // INT64_MAX + 1 wraps
  EXPECT_EQ(reference.back(), std::numeric_limits<int64_t>::min());
  const std::vector<int64_t> greater{0, 0, 1, 0, 1, 0, 0, 0}, equal{1, 0, 0, 0, 0, 0, 0, 0};
  const size_t compared = 8 + 8 + 4 + 1 + 8 + 2 + 2 + 8;  // the values before `a > c`
  EXPECT_EQ(std::vector<int64_t>(reference.begin() + compared, reference.begin() + compared + 8), greater);
  EXPECT_EQ(std::vector<int64_t>(reference.begin() + compared + 8, reference.begin() + compared + 16), equal);
  const int64_t wide = (int64_t(1) << 62) + (int64_t(1) << 38) + 1;  // nearer the float above
  const auto as_float = [&] {
    return torch::from_blob(const_cast<int64_t*>(&wide), {1}, torch::kLong).clone().to(torch::kFloat).item<float>();
  };
  const auto [fused_float, reference_float] = fused_and_reference([&] { return as_float(); });
  EXPECT_EQ(reference_float, static_cast<float>(wide));
  EXPECT_EQ(fused_float, static_cast<float>(wide));
}

TEST(Fusion, ExpNearOverflowAndUnderflowMatchesTheInterpreter) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> data{88.0f,  88.3f,   88.6f, 88.72f, 88.7228f, 88.73f, 89.0f, -87.0f, -87.3f,
                          -87.5f, -100.0f, 0.0f,  1.0f,   -1.0f,    10.5f,  nan,   inf,    -inf};
  auto run = [&](const std::string& backend) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    auto out =
        (torch::from_blob(data.data(), {int64_t(data.size())}, torch::kFloat).clone() * 1.0).exp().to_vector<float>();
    kiln::config().backend = saved;
    return out;
  };
  HalideBackend halide;
  const auto fused = run("halide"), reference = run("interp");
  ASSERT_EQ(fused.size(), reference.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    if (std::isnan(reference[i]) || std::isinf(reference[i]) || reference[i] == 0)
      EXPECT_TRUE(fused[i] == reference[i] || (std::isnan(fused[i]) && std::isnan(reference[i])))
          << "exp(" << data[i] << "): " << fused[i] << " vs " << reference[i];
    else
      EXPECT_NEAR(fused[i], reference[i], 4e-7 * reference[i]) << "exp(" << data[i] << ")";
  }
}

// exp, tanh and erf's polynomials run in fused multiply-adds (codegen/halide/ops.cpp, fma): over
// their whole float range (results that are subnormal aside), each stays within a few units in
// the last place of the exact value.
TEST(Fusion, ExpTanhAndErfStayWithinAFewUlpsOfTheExactValue) {
  HalideBackend halide;
  auto sweep = [](float lo, float hi, int n) {
    std::vector<float> x;
    for (int i = 0; i <= n; ++i) x.push_back(lo + (hi - lo) * float(i) / float(n));
    for (float tiny : {1e-30f, -1e-30f, 1e-10f, -3e-8f, 1e-4f, 0.0f, -0.0f}) x.push_back(tiny);
    return x;
  };
  auto worst_ulps = [](const std::vector<float>& x, const std::vector<float>& got, double (*exact)(double)) {
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = exact(double(x[i]));
      if (std::fabs(want) < std::numeric_limits<float>::min()) continue;  // subnormal results: rounded once
      const double ulp =
          std::nextafter(float(std::fabs(want)), std::numeric_limits<float>::infinity()) - float(std::fabs(want));
      worst = std::max(worst, std::fabs(double(got[i]) - want) / ulp);
    }
    return worst;
  };
  auto from = [](std::vector<float> v) {
    return torch::from_blob(v.data(), {int64_t(v.size())}, torch::kFloat).clone();
  };
  const auto ex = sweep(-103.0f, 88.7f, 40000), th = sweep(-10.0f, 10.0f, 40000), er = sweep(-6.0f, 6.0f, 40000);
  const auto exp_got = (from(ex) * 1.0).exp().to_vector<float>();
  const auto tanh_got = (from(th) * 1.0).tanh().to_vector<float>();
  const auto erf_got = (from(er) * 1.0).erf().to_vector<float>();
  // Measured: exp 0.89 ulps over all floats whose exp is normal (ops.cpp), tanh 4.4 (5.3 over
  // all floats in [-10, 10]; 5.4 before Eigen's rational form; 4.3 with Eigen's test for small x,
  // 5.5 over all floats), erf 4.8 on these points (6.8 over all floats; 5.4 and 7.5 by Horner's
  // rule, as Halide's erf, which gave NaN at +-inf and +0 at -0). erf stays within [-1, 1]:
  // unclamped, it exceeded 1 just below 4.
  EXPECT_LE(worst_ulps(ex, exp_got, [](double v) { return std::exp(v); }), 1.5);
  EXPECT_LE(worst_ulps(th, tanh_got, [](double v) { return std::tanh(v); }), 5.0);
  EXPECT_LE(worst_ulps(er, erf_got, [](double v) { return std::erf(v); }), 8.0);
  EXPECT_LE(*std::max_element(erf_got.begin(), erf_got.end()), 1.0f);
  EXPECT_GE(*std::min_element(erf_got.begin(), erf_got.end()), -1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto erf_special = (from({nan, inf, -inf, -0.0f, 1e-37f, 4.0f, -5.0f}) * 1.0).erf().to_vector<float>();
  EXPECT_TRUE(std::isnan(erf_special[0]));
  EXPECT_EQ(erf_special[1], 1.0f);
  EXPECT_EQ(erf_special[2], -1.0f);
  EXPECT_TRUE(erf_special[3] == 0.0f && std::signbit(erf_special[3]));
  EXPECT_FLOAT_EQ(erf_special[4], float(std::erf(1e-37)));
  EXPECT_EQ(erf_special[5], 1.0f);
  EXPECT_EQ(erf_special[6], -1.0f);
  const auto exp_special = (from({nan, inf, -inf, 100.0f, -200.0f, -100.0f}) * 1.0).exp().to_vector<float>();
  EXPECT_TRUE(std::isnan(exp_special[0]));
  EXPECT_EQ(exp_special[1], inf);
  EXPECT_EQ(exp_special[2], 0.0f);
  EXPECT_EQ(exp_special[3], inf);
  EXPECT_EQ(exp_special[4], 0.0f);
  EXPECT_EQ(exp_special[5], std::exp(-100.0f));  // subnormal, rounded once
  // Across the subnormal results each is within 1.5 subnormal steps (2^-149) of the exact value
  // (the smallest, 2^-149, comes out 0 below -102.93: 1.32 steps off at -103); at the top of the
  // range the scale 2^127 keeps the largest results finite, then inf.
  const std::vector<float> edges{-87.3f,  -87.4f,  -90.0f,  -95.5f, -101.0f, -102.9f,
                                 -103.0f, -103.5f, -104.5f, 88.5f,  88.72f,  88.73f};
  const auto exp_edges = (from(edges) * 1.0).exp().to_vector<float>();
  for (size_t i = 0; i < edges.size(); ++i) {
    const double want = std::exp(double(edges[i]));
    if (want < std::numeric_limits<float>::min())
      EXPECT_LE(std::fabs(double(exp_edges[i]) - want), 1.5 * std::ldexp(1.0, -149)) << "exp(" << edges[i] << ")";
    else if (want > std::numeric_limits<float>::max())
      EXPECT_EQ(exp_edges[i], inf) << "exp(" << edges[i] << ")";
    else
      EXPECT_NEAR(exp_edges[i], want, 1.5e-7 * want) << "exp(" << edges[i] << ")";
  }
  const auto special = (from({nan, inf, -inf, 0.0f, 1e-37f, -5e-39f, 3e-4f}) * 1.0).tanh().to_vector<float>();
  EXPECT_TRUE(std::isnan(special[0]));
  EXPECT_EQ(special[1], 1.0f);
  EXPECT_EQ(special[2], -1.0f);
  EXPECT_EQ(special[3], 0.0f);
  // Near and below the smallest normal float tanh(x) is x, digit for digit.
  EXPECT_EQ(special[4], 1e-37f);
  EXPECT_EQ(special[5], -5e-39f);
  EXPECT_EQ(special[6], float(std::tanh(double(3e-4f))));
}

// Cross-entropy picks the target's logit with a one-hot sum (frontend/losses.cpp): fused, its
// loss and gradient match the interpreter's, ignored targets and class weights included.
TEST(Fusion, CrossEntropyMatchesTheInterpreter) {
  auto run = [](const std::string& backend) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    torch::manual_seed(5);
    auto logits = (torch::randn({64, 100}) * 4).requires_grad_();
    std::vector<int64_t> classes(64);
    for (size_t i = 0; i < classes.size(); ++i)
      classes[i] = i % 7 == 0 ? -100 : int64_t(i * 37 % 100);  // -100: ignored
    auto target = torch::from_blob(classes.data(), {64}, torch::kLong).clone();
    auto weight = torch::rand({100}) + 0.5;
    auto loss =
        torch::nn::functional::cross_entropy(logits, target) +
        torch::nn::functional::cross_entropy(
            logits, target, torch::nn::functional::CrossEntropyFuncOptions().weight(weight).label_smoothing(0.1));
    loss.backward();
    auto out = loss_and_gradient(loss, logits);
    kiln::config().backend = saved;
    return out;
  };
  const auto fused = run("halide"), reference = run("interp");
  expect_near_all(fused, reference);
}

// Cross-entropy with a mean over its targets, forward and backward, reads the logits in one row
// kernel: their maxima, the picked logits, the sums of exponentials and the gradient, per row.
// The targets' weights and their sum come first (traced before the logits' passes: see
// fusion::make_plan), then that kernel, then the loss's sum: four launches.
TEST(Fusion, CrossEntropyForwardAndBackwardIsOnePassOverTheLogits) {
  HalideBackend halide;  // counts compiled launches; run() switches to the interpreter and back
  auto run = [](const std::string& backend, kiln::Stats* stats) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    torch::manual_seed(6);
    auto logits = (torch::randn({96, 1000}) * 3).requires_grad_();
    auto target = torch::randint(0, 1000, {96});
    target.narrow(0, 5, 3).fill_(-100);  // ignored
    kiln::sync();
    torch::Tensor loss;
    *stats = count([&] {
      loss = torch::nn::functional::cross_entropy(logits, target);
      loss.backward();
    });
    auto out = loss_and_gradient(loss, logits);
    kiln::config().backend = saved;
    return out;
  };
  kiln::Stats fused_stats, unused;
  const auto fused = run("halide", &fused_stats), reference = run("interp", &unused);
  EXPECT_EQ(fused_stats.kernel_launches, 4);
  expect_near_all(fused, reference);
}

// A flush of a structure seen before reuses its partition (fusion/partition_cache.h) with this
// flush's nodes and constants: a new scalar changes the result, not the plan; a new shape or a
// constant that simplifies away (x * 1) makes a new one.
TEST(Fusion, RepeatedSegmentsReuseTheirPartition) {
  HalideBackend halide;
  auto program = [](int64_t n, double scale) {
    torch::Tensor x = torch::arange(n).to(torch::kFloat);
    return (torch::tanh(x * scale) + x * scale).sum().item<float>();
  };
  auto expected = [](int64_t n, double scale) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::tanh(double(float(i * scale))) + float(i * scale);
    return s;
  };
  program(100, 0.5);  // may make partitions (arange and the program)
  const auto before = kiln::fusion::partition_cache_counts();
  EXPECT_NEAR(program(100, 0.5), expected(100, 0.5), 1e-3);
  EXPECT_NEAR(program(100, 0.25), expected(100, 0.25), 1e-3);
  const auto same = kiln::fusion::partition_cache_counts();
  EXPECT_EQ(same.made, before.made);
  EXPECT_GT(same.reused, before.reused);
  EXPECT_NEAR(program(200, 0.25), expected(200, 0.25), 1e-3);  // new sizes: a new partition
  EXPECT_NEAR(program(100, 1.0), expected(100, 1.0), 1e-3);    // x * 1 is x: a new structure
  EXPECT_GT(kiln::fusion::partition_cache_counts().made, same.made);
}
