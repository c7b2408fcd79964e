// Convolution, pooling, padding and batch norm: values against direct loops written here, gradients
// against finite differences (float64), the fused Halide path against the interpreter, the
// modules' parameters and buffers, and the errors for bad shapes.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "gradcheck.h"

namespace {

using kiln::Tensor;
using kiln::TensorList;
namespace F = kiln::nn::functional;

class Conv : public ::testing::Test {
 protected:
  void SetUp() override { kiln::manual_seed(0); }
};

// out[n][o][i][j] = b[o] + sum over c, u, v of x[n][g*Cg + c][i*s - p + u*d][j*s - p + v*d] * w[o][c][u][v]
std::vector<double> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t p, int64_t d,
                                int64_t groups, int64_t& oh, int64_t& ow) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t o = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3), og = o / groups;
  oh = (h + 2 * p - d * (kh - 1) - 1) / s + 1;
  ow = (wd + 2 * p - d * (kw - 1) - 1) / s + 1;
  auto xv = x.contiguous().to_vector<double>(), wv = w.contiguous().to_vector<double>();
  auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(o, 0.0);
  std::vector<double> out(n * o * oh * ow);
  for (int64_t in = 0; in < n; ++in)
    for (int64_t io = 0; io < o; ++io)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bv[io];
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t y = i * s - p + u * d, z = j * s - p + v * d;
                if (y < 0 || y >= h || z < 0 || z >= wd) continue;
                const int64_t channel = (io / og) * cg + ic;
                acc += xv[((in * c + channel) * h + y) * wd + z] * wv[((io * cg + ic) * kh + u) * kw + v];
              }
          out[((in * o + io) * oh + i) * ow + j] = acc;
        }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST_F(Conv, Conv2dMatchesDirectLoops) {
  struct Geometry {
    int64_t c, o, k, s, p, d, groups;
  };
  for (Geometry g : {Geometry{3, 4, 3, 1, 1, 1, 1}, Geometry{2, 6, 3, 2, 0, 1, 2}, Geometry{4, 4, 2, 1, 2, 2, 4},
                     Geometry{1, 3, 5, 3, 2, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "c=" << g.c << " o=" << g.o << " k=" << g.k << " s=" << g.s << " p=" << g.p
                                      << " d=" << g.d << " groups=" << g.groups);
    Tensor x = kiln::randn({2, g.c, 9, 8}), w = kiln::randn({g.o, g.c / g.groups, g.k, g.k}), b = kiln::randn({g.o});
    Tensor y = kiln::conv2d(x, w, b, g.s, g.p, g.d, g.groups);
    int64_t oh, ow;
    auto want = direct_conv(x, w, b, g.s, g.p, g.d, g.groups, oh, ow);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, g.o, oh, ow}));
    EXPECT_TRUE(y.is_contiguous());
    expect_near(y.to_vector<double>(), want, 1e-4);
  }
}

TEST_F(Conv, Conv2dUnbatchedAndWithoutBias) {
  Tensor x = kiln::randn({3, 7, 7}), w = kiln::randn({2, 3, 3, 3});
  Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().padding(1));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 7, 7}));
  int64_t oh, ow;
  expect_near(y.to_vector<double>(), direct_conv(x.unsqueeze(0), w, Tensor(), 1, 1, 1, 1, oh, ow), 1e-4);
}

TEST_F(Conv, PoolingMatchesDirectLoops) {
  Tensor x = kiln::randn({2, 3, 7, 6});
  auto xv = x.to_vector<double>();
  auto at = [&](int64_t n, int64_t c, int64_t i, int64_t j) { return xv[((n * 3 + c) * 7 + i) * 6 + j]; };
  // max_pool2d kernel 3, stride 2, padding 1, ceil mode: 4 x 4 windows, edges clipped.
  Tensor m = kiln::max_pool2d(x, 3, 2, 1, 1, /*ceil_mode=*/true);
  ASSERT_EQ(m.sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4}));
  std::vector<double> want_max, want_avg;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double best = -std::numeric_limits<double>::infinity();
          for (int64_t u = 0; u < 3; ++u)
            for (int64_t v = 0; v < 3; ++v) {
              int64_t y = i * 2 - 1 + u, z = j * 2 - 1 + v;
              if (y >= 0 && y < 7 && z >= 0 && z < 6) best = std::max(best, at(n, c, y, z));
            }
          want_max.push_back(best);
        }
  expect_near(m.to_vector<double>(), want_max, 1e-6);
  // avg_pool2d kernel 2, stride 2, padding 1, count_include_pad false: divisor counts real cells.
  Tensor a = F::avg_pool2d(x, F::AvgPool2dFuncOptions(2).padding(1).count_include_pad(false));
  ASSERT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          double total = 0;
          int count = 0;
          for (int64_t u = 0; u < 2; ++u)
            for (int64_t v = 0; v < 2; ++v) {
              int64_t y = i * 2 - 1 + u, z = j * 2 - 1 + v;
              if (y >= 0 && y < 7 && z >= 0 && z < 6) total += at(n, c, y, z), ++count;
            }
          want_avg.push_back(total / count);
        }
  expect_near(a.to_vector<double>(), want_avg, 1e-5);
  // The default avg pool counts the padding: a corner window with one real cell divides by 4.
  Tensor padded = kiln::avg_pool2d(x, 2, 2, 1);
  EXPECT_NEAR(padded.to_vector<double>()[0], at(0, 0, 0, 0) / 4, 1e-6);
}

// max_pool2d's gradient goes to one entry per window, as PyTorch's indices pick it: the first
// maximum in row-major order (ties after a ReLU are common), or the last NaN; overlapping windows
// add up at entries they share. amax, by contrast, shares it among ties.
TEST_F(Conv, MaxPoolGradientGoesToTheFirstMaximum) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = kiln::tensor(std::vector<double>{1, 1, 0, 2,    //
                                              1, 0, 2, 2,    //
                                              nan, 3, 5, 5,  //
                                              nan, 5, 5, 4})
                 .reshape({1, 1, 4, 4})
                 .requires_grad_(true);
  kiln::max_pool2d(x, 2).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}));
  // 3x3 windows at stride 1 over a constant image: every window picks its top-left entry.
  Tensor c = kiln::full({1, 1, 4, 4}, 2.0, kiln::kFloat64).requires_grad_(true);
  kiln::max_pool2d(c, 3, 1).sum().backward();
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  Tensor a = kiln::full({2, 2}, 2.0, kiln::kFloat64).requires_grad_(true);
  a.amax().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

TEST_F(Conv, ConstantPad) {
  Tensor x = kiln::arange(6.0).reshape({2, 3});
  Tensor y = F::pad(x, F::PadFuncOptions({1, 0, 0, 2}).value(-1));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{4, 4}));
  expect_near(y.to_vector<double>(), {-1, 0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1}, 0);
}

TEST_F(Conv, Gradients) {
  using gradcheck::check;
  using gradcheck::randn;
  gradcheck::Options first;
  first.gradgrad = false;
  struct Case {
    const char* name;
    gradcheck::Fn f;
    TensorList inputs;
    bool gradgrad;
  };
  const std::vector<Case> cases = {
      {"conv2d padding 1",
       [](const TensorList& t) { return kiln::conv2d(t[0], t[1], t[2], 1, 1); },
       {randn({2, 2, 5, 5}), randn({3, 2, 3, 3}), randn({3})},
       true},
      {"conv2d stride 2 dilation 2 groups 2",
       [](const TensorList& t) { return kiln::conv2d(t[0], t[1], {}, 2, 1, 2, 2); },
       {randn({1, 4, 7, 6}), randn({2, 2, 2, 3})},
       false},
      {"max_pool2d overlapping",
       [](const TensorList& t) { return kiln::max_pool2d(t[0], 3, 2, 1, 1, true); },
       {randn({2, 2, 6, 5})},
       false},
      {"max_pool2d 2x2", [](const TensorList& t) { return kiln::max_pool2d(t[0], 2); }, {randn({1, 3, 4, 6})}, false},
      {"avg_pool2d",
       [](const TensorList& t) { return kiln::avg_pool2d(t[0], 3, 2, 1, true, false); },
       {randn({2, 2, 6, 5})},
       true},
      {"constant_pad_nd",
       [](const TensorList& t) {
         return kiln::constant_pad_nd(t[0], {2, 1, 0, 3}, 0.5);
       },
       {randn({2, 3, 4})},
       true},
      {"batch_norm training",
       [](const TensorList& t) { return kiln::batch_norm(t[0], t[1], t[2], {}, {}, /*training=*/true, 0.1, 1e-5); },
       {randn({4, 3, 2, 2}), randn({3}), randn({3})},
       true},
      {"batch_norm eval",
       [](const TensorList& t) {
         Tensor mean = kiln::tensor({0.5, -0.25, 1.0}, kiln::kFloat64),
                var = kiln::tensor({1.5, 0.5, 2.0}, kiln::kFloat64);
         return kiln::batch_norm(t[0], t[1], t[2], mean, var, /*training=*/false, 0.1, 1e-5);
       },
       {randn({4, 3, 5}), randn({3}), randn({3})},
       false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    gradcheck::Options o;
    o.gradgrad = c.gradgrad;
    EXPECT_TRUE(check(c.f, c.inputs, o)) << c.name;
  }
}

// The same CNN step on the Halide backend and on the reference interpreter.
TEST_F(Conv, FusedMatchesInterpreter) {
  auto run = [](const std::string& backend) {
    const std::string saved = kiln::config().backend;
    kiln::config().backend = backend;
    kiln::manual_seed(3);
    kiln::nn::Sequential net(kiln::nn::Conv2d(kiln::nn::Conv2dOptions(2, 4, 3).padding(1)), kiln::nn::BatchNorm2d(4),
                             kiln::nn::ReLU(), kiln::nn::MaxPool2d(2), kiln::nn::Conv2d(4, 3, 2),
                             kiln::nn::AvgPool2d(kiln::nn::AvgPool2dOptions(2).stride(1)), kiln::nn::Flatten());
    Tensor x = kiln::randn({3, 2, 8, 8});
    Tensor loss = net->forward(x).square().sum();
    loss.backward();
    std::vector<double> out = loss.reshape({1}).to_vector<double>();
    for (const auto& p : net->parameters()) {
      auto g = p.grad().to_vector<double>();
      out.insert(out.end(), g.begin(), g.end());
    }
    for (const auto& b : net->buffers()) {
      auto v = b.to(kiln::kFloat64).to_vector<double>();
      out.insert(out.end(), v.begin(), v.end());
    }
    kiln::config().backend = saved;
    return out;
  };
  auto fused = run("halide"), reference = run("interp");
  ASSERT_EQ(fused.size(), reference.size());
  for (size_t i = 0; i < fused.size(); ++i)
    EXPECT_NEAR(fused[i], reference[i], 1e-3 * (1 + std::fabs(reference[i]))) << "value " << i;
}

TEST_F(Conv, ModulesAndRunningStatistics) {
  kiln::nn::Conv2d conv(kiln::nn::Conv2dOptions(4, 6, {3, 2}).groups(2).bias(false));
  EXPECT_EQ(conv->weight.sizes().vec(), (std::vector<int64_t>{6, 2, 3, 2}));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv->parameters().size(), 1u);
  const double bound = 1 / std::sqrt(2.0 * 3 * 2);  // kaiming_uniform(a = sqrt(5)) over fan_in 12
  EXPECT_LE(conv->weight.abs().max().item<double>(), bound);

  kiln::nn::BatchNorm2d bn(kiln::nn::BatchNormOptions(2).momentum(0.5));
  auto names = bn->named_buffers().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  Tensor x = kiln::tensor({1.0, 2.0, 3.0, 5.0, 7.0, 9.0, 4.0, 6.0}).reshape({2, 2, 2, 1});
  Tensor y = bn->forward(x);
  // Channel 0 holds {1, 2, 7, 9}: mean 4.75, biased var 11.1875, unbiased 14.9167.
  EXPECT_NEAR(bn->running_mean[0].item<double>(), 0.5 * 4.75, 1e-5);
  EXPECT_NEAR(bn->running_var[0].item<double>(), 0.5 + 0.5 * 11.1875 * 4 / 3, 1e-4);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_NEAR(y[0][0][0][0].item<double>(), (1 - 4.75) / std::sqrt(11.1875 + 1e-5), 1e-5);
  bn->eval();
  Tensor z = bn->forward(x);
  EXPECT_NEAR(z[0][0][0][0].item<double>(), (1 - 2.375) / std::sqrt(bn->running_var[0].item<double>() + 1e-5), 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);  // evaluation leaves the statistics alone

  kiln::nn::BatchNorm1d cumulative(kiln::nn::BatchNormOptions(3).momentum(std::nullopt));
  cumulative->forward(kiln::full({4, 3}, 2.0));
  cumulative->forward(kiln::full({4, 3}, 4.0));
  EXPECT_NEAR(cumulative->running_mean[1].item<double>(), 3.0, 1e-6);  // the average of the batches' means
}

// Each bad input throws kiln::Error naming the op and the shapes, and leaves kiln usable.
TEST_F(Conv, Errors) {
  auto expect_error = [](const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const kiln::Error& e) {
      for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  Tensor x = kiln::randn({2, 3, 5, 5});
  expect_error([&] { kiln::conv2d(x, kiln::randn({4, 2, 3, 3})); }, {"conv2d", "[4, 2, 3, 3]", "[2, 3, 5, 5]"});
  expect_error([&] { kiln::conv2d(x, kiln::randn({4, 3, 7, 7})); }, {"conv2d", "Kernel size", "[2, 3, 5, 5]"});
  expect_error([&] { kiln::conv2d(x, kiln::randn({4, 3, 3})); }, {"conv2d", "[4, 3, 3]"});
  expect_error([&] { kiln::conv2d(x.flatten(), kiln::randn({4, 3, 3, 3})); }, {"conv2d", "[150]"});
  expect_error([&] { kiln::conv2d(x, kiln::randn({4, 3, 3, 3}), kiln::randn({5})); }, {"conv2d", "bias", "[5]"});
  expect_error([&] { kiln::conv2d(x, kiln::randn({4, 3, 3, 3}), {}, 0); }, {"conv2d", "stride"});
  expect_error([&] { kiln::max_pool2d(x, 2, 2, 2); }, {"max_pool2d", "pad should be at most half"});
  expect_error([&] { kiln::max_pool2d(x, 7); }, {"max_pool2d", "[2, 3, 5, 5]"});
  expect_error([&] { kiln::avg_pool2d(x.flatten(0, 1).flatten(), 2); }, {"avg_pool2d", "[150]"});
  expect_error([&] { kiln::nn::BatchNorm2d(4)->forward(x); }, {"BatchNorm2d", "4", "[2, 3, 5, 5]"});
  expect_error([&] { kiln::nn::BatchNorm1d(3)->forward(x); }, {"BatchNorm1d", "[2, 3, 5, 5]"});
  expect_error([&] { kiln::nn::BatchNorm1d(3)->forward(kiln::randn({1, 3})); }, {"more than 1 value", "[1, 3]"});
  expect_error([&] { kiln::nn::Conv2d(kiln::nn::Conv2dOptions(3, 4, 3).groups(2)); }, {"Conv2d", "groups"});
  // Nothing broke: a valid call after the errors works.
  EXPECT_EQ(kiln::conv2d(x, kiln::randn({4, 3, 3, 3})).sizes().vec(), (std::vector<int64_t>{2, 4, 3, 3}));
}

}  // namespace
