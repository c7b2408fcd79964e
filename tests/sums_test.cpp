// Float sums as accurate as libtorch 1.13's cascade sums, in every shape a reduction kernel takes
// (codegen/halide/reduction.h, Accumulator: blocks added in float64), lazy and eager. The figures
// libtorch gives on the same programs are in the comments.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>

#include "runtime/config.h"

namespace {

// The Halide backend, lazy or eager, restored afterwards.
struct Mode {
  explicit Mode(bool lazy) : saved(kiln::config()) {
    kiln::config().backend = "halide";
    kiln::config().compile_in_background = false;
    kiln::set_lazy(lazy);
  }
  ~Mode() {
    kiln::set_lazy(saved.lazy);
    kiln::config() = saved;
  }
  kiln::Config saved;
};

double relative_error(double got, double exact) { return std::fabs(got - exact) / std::fabs(exact); }

// Each element of `got` against float64 sums of the same float32 values.
double worst_error(const torch::Tensor& got, const torch::Tensor& exact) {
  auto g = got.to_vector<double>(), e = exact.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, relative_error(g[i], e[i]));
  return worst;
}

class Sums : public ::testing::TestWithParam<bool> {};

// 2^24 values of 0.1f: libtorch 1677723.1 (8.9e-7 off), mean 0.1000001; added in sequence per
// vector lane, kiln gave 1677462.1 (1.5e-4 off) and 0.0999845. The bound: a block of 64 steps in
// float32 is off by at most 63 ulps of its sum, and float64 adds the blocks.
TEST_P(Sums, TwoToTheTwentyFourValuesAsAccurateAsLibtorch) {
  Mode mode(GetParam());
  const double exact = double(0.1f) * (1 << 24);
  auto x = torch::full({1 << 24}, 0.1f);
  EXPECT_LT(relative_error(x.sum().item<double>(), exact), 8.9e-7);
  EXPECT_LT(relative_error(x.mean().item<double>(), exact / (1 << 24)), 8.9e-7);
  // A ramp of 4M: libtorch 5e-8 off, kiln in sequence per lane 1.2e-6.
  auto ramp = torch::arange(1 << 22, torch::kFloat);
  EXPECT_LT(relative_error(ramp.sum().item<double>(), double(1 << 22) * ((1 << 22) - 1) / 2), 5e-8);
}

// Rows (softmax's denominators, LayerNorm's statistics), long rows, columns (a bias's gradient
// over the batch), a middle dim, a strided view's whole sum, and per-channel sums over the batch
// and the image (batch norm's, the CNN's sizes): each within a few float32 ulps.
// A reduction over axes of extent 1 only is each value itself (the Halide lowering once failed on
// such a kernel, an RDom of no dims, and ran it on the interpreter).
TEST_P(Sums, OverAxesOfExtentOneAreTheValuesThemselves) {
  Mode mode(GetParam());
  kiln::reset_stats();
  for (auto [shape, dims] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{4, 1, 3}, {1}}, {{1, 3}, {0}}, {{1}, {0}}, {{2, 1, 1, 5}, {1, 2}}}) {
    auto x = torch::randn(shape);
    EXPECT_TRUE(torch::equal((x * 2).sum(dims, true), x * 2));
    EXPECT_TRUE(torch::equal((x * 2).amax(dims, true), x * 2));
    auto positive = x > 0;  // bool: its sum is int64, a Cast
    auto count = positive.sum(dims, true);
    EXPECT_EQ(count.scalar_type(), torch::kLong);
    EXPECT_TRUE(torch::equal(count, positive.to(torch::kLong)));
  }
  EXPECT_EQ(kiln::stats().kernels_failed, 0);
}

TEST_P(Sums, EveryShapeWithinAFewUlps) {
  Mode mode(GetParam());
  torch::manual_seed(0);
  struct Case {
    std::vector<int64_t> shape, dims;
    bool transposed;
  };
  for (const Case& c :
       {Case{{4, 1 << 20}, {1}, false}, Case{{1 << 20, 4}, {0}, false}, Case{{1 << 14, 300}, {1}, false},
        Case{{1 << 18, 24}, {0}, false}, Case{{4, 1 << 16, 8}, {1}, false}, Case{{2048, 1000}, {0, 1}, true},
        Case{{64, 32, 784}, {0, 2}, false}, Case{{64, 64, 196}, {0, 2}, false}}) {
    auto x = torch::rand(c.shape) + 0.1;
    if (c.transposed) x = x.t();
    const auto exact = x.to(torch::kDouble).sum(c.dims);
    EXPECT_LT(worst_error(x.sum(c.dims), exact), 4 * 6e-8) << "shape " << torch::IntArrayRef(c.shape);
  }
}

// A per-channel maximum over the batch and the image, in vector lanes along each row and not in
// blocks, as a sum's: each the float32 maximum itself.
TEST_P(Sums, PerChannelMaximaAreExact) {
  Mode mode(GetParam());
  torch::manual_seed(1);
  auto x = torch::randn({64, 32, 28, 28});
  EXPECT_TRUE(torch::equal(x.amax({0, 2, 3}), x.to(torch::kDouble).amax({0, 2, 3}).to(torch::kFloat)));
}

// What is built on sums: mean, var, std, norm, logsumexp and softmax over 2^22 elements.
TEST_P(Sums, WhatIsBuiltOnSums) {
  Mode mode(GetParam());
  const int64_t n = 1 << 22;
  // 0.1, 0.3, 0.1, ...: mean 0.2, variance 0.01
  auto x = torch::tensor({0.1f, 0.3f}).reshape({1, 2}).expand({n / 2, 2}).reshape({n}) * 1.0;
  const auto xd = x.to(torch::kDouble);
  EXPECT_LT(relative_error(x.var(false).item<double>(), xd.var(false).item<double>()), 1e-6);
  EXPECT_LT(relative_error(x.std().item<double>(), xd.std().item<double>()), 1e-6);
  EXPECT_LT(relative_error(x.norm().item<double>(), xd.norm().item<double>()), 1e-6);
  EXPECT_LT(relative_error(x.logsumexp(0).item<double>(), xd.logsumexp(0).item<double>()), 1e-6);
  EXPECT_LT(relative_error(x.softmax(0)[0].item<double>(), xd.softmax(0)[0].item<double>()), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(LazyAndEager, Sums, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Lazy" : "Eager"; });

}  // namespace
