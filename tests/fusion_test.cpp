// What fusion promises, counted: kernel launches per program, and no new kernels when only sizes
// or scalar values change. Run on the Halide backend whatever KILN_BACKEND says.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "fusion/partition_cache.h"
#include "fusion_test_util.h"
#include "runtime/config.h"

using namespace fusion_test;

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
