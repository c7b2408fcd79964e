// Eager mode's whole-op kernels (frontend/native_ops.h, codegen/native_kernels.h): layer_norm,
// softmax, log_softmax, gelu, cross_entropy, batch_norm, conv2d's im2col, max_pool2d, avg_pool2d,
// adaptive_avg_pool2d and the Adam, AdamW and SGD
// updates run as one precompiled kernel each in eager mode (the native_kernels statistic counts them), give lazy mode's
// results (which fuses the composites), pass float64 gradient checks (second order through the composites), and name
// the op and shapes when the input is bad. Layer norm's second derivative is checked in lazy mode too.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <functional>

#include "gradcheck.h"
#include "runtime/config.h"
#include "runtime/stats.h"

namespace {

using kiln::Tensor;
namespace F = torch::nn::functional;

struct Mode {
  explicit Mode(bool lazy) : lazy_(kiln::is_lazy()) {
    kiln::sync();
    kiln::set_lazy(lazy);
    kiln::reset_stats();
  }
  ~Mode() {
    kiln::sync();
    kiln::set_lazy(lazy_);
  }
  bool lazy_;
};

// Within rtol of b, or of a tenth of b's largest magnitude where b is smaller (a gradient that is
// a difference of two terms, as GELU's, loses float32 digits to the cancellation either way).
void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rtol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], rtol * std::max(std::fabs(b[i]), 0.1 * scale) + 1e-30) << what << " value " << i;
}

// Each op's output and its inputs' gradients, float32, in the current mode.
std::vector<std::vector<double>> run_ops() {
  std::vector<std::vector<double>> out;
  auto keep = [&](const Tensor& t) { out.push_back(t.contiguous().to_vector<double>()); };
  auto with_grads = [&](const Tensor& y, const std::vector<Tensor>& inputs) {
    keep(y);
    Tensor g = torch::randn(y.sizes());
    y.backward(g);
    for (const Tensor& t : inputs) {
      keep(t.grad());
      t.mutable_grad() = Tensor();
    }
  };
  torch::manual_seed(3);
  Tensor x = torch::randn({33, 300}).requires_grad_(true);
  Tensor w = torch::randn({300}).requires_grad_(true), b = torch::randn({300}).requires_grad_(true);
  with_grads(F::layer_norm(x * 3 + 1, F::LayerNormFuncOptions({300}).weight(w).bias(b)), {x, w, b});
  with_grads(F::layer_norm(x, F::LayerNormFuncOptions({300})), {x});
  Tensor cube = torch::randn({4, 5, 67}).requires_grad_(true);
  Tensor w2 = torch::randn({5, 67}).requires_grad_(true);
  with_grads(F::layer_norm(cube, F::LayerNormFuncOptions({5, 67}).weight(w2).eps(1e-3)), {cube, w2});
  with_grads(torch::softmax(x, 1), {x});
  with_grads(torch::log_softmax(x * 4, -1), {x});
  with_grads(torch::softmax(x.t(), 1), {x});  // a strided input, made contiguous first
  with_grads(torch::softmax(x, 0), {x});      // along another dim than the last
  with_grads(torch::gelu(x * 2), {x});
  with_grads(torch::gelu(cube, "tanh"), {cube});
  with_grads(torch::log_softmax(cube * 2, 1), {cube});
  Tensor images = torch::randn({2, 4, 9, 8}).requires_grad_(true),
         kernels = torch::randn({6, 2, 3, 2}).requires_grad_(true);
  with_grads(
      F::conv2d(images, kernels, F::Conv2dFuncOptions().stride({2, 1}).padding({1, 2}).dilation({1, 2}).groups(2)),
      {images, kernels});
  with_grads(F::max_pool2d(images, F::MaxPool2dFuncOptions(2)), {images});
  Tensor gamma = torch::randn({4}).requires_grad_(true), beta = torch::randn({4}).requires_grad_(true);
  Tensor running_mean = torch::zeros({4}), running_var = torch::ones({4});
  with_grads(F::batch_norm(images * 2 + 1, running_mean, running_var,
                           F::BatchNormFuncOptions().weight(gamma).bias(beta).training(true).momentum(0.2)),
             {images, gamma, beta});
  keep(running_mean);
  keep(running_var);
  with_grads(
      F::max_pool2d(images, F::MaxPool2dFuncOptions(3).stride({2, 1}).padding(1).dilation({1, 2}).ceil_mode(true)),
      {images});
  with_grads(F::avg_pool2d(images, F::AvgPool2dFuncOptions(2)), {images});
  with_grads(F::avg_pool2d(images, F::AvgPool2dFuncOptions({3, 2}).stride({2, 1}).padding(1).ceil_mode(true)),
             {images});
  with_grads(F::avg_pool2d(images, F::AvgPool2dFuncOptions(3).stride(2).padding(1).count_include_pad(false)), {images});
  with_grads(F::avg_pool2d(images, F::AvgPool2dFuncOptions(2).padding(1).divisor_override(3)), {images});
  with_grads(F::adaptive_avg_pool2d(images, F::AdaptiveAvgPool2dFuncOptions({4, 3})), {images});
  with_grads(F::adaptive_avg_pool2d(images[0], F::AdaptiveAvgPool2dFuncOptions(1)), {images});
  Tensor labels = torch::randint(0, 300, {33});
  labels[5].fill_(-100);
  with_grads(F::cross_entropy(x, labels), {x});
  with_grads(F::cross_entropy(x, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)), {x});
  with_grads(F::cross_entropy(x, labels, F::CrossEntropyFuncOptions().reduction(torch::kNone)), {x});
  return out;
}

TEST(NativeEagerKernels, MatchLazyModeAndRunInEagerModeOnly) {
  std::vector<std::vector<double>> lazy, eager;
  {
    Mode mode(true);
    lazy = run_ops();
    EXPECT_EQ(kiln::stats().native_kernels, 0);
  }
  {
    Mode mode(false);
    eager = run_ops();
    // 23 ops (the convolution's im2col), each a forward and a backward kernel.
    EXPECT_EQ(kiln::stats().native_kernels, 46);
  }
  ASSERT_EQ(lazy.size(), eager.size());
  for (size_t i = 0; i < lazy.size(); ++i) expect_close(eager[i], lazy[i], 1e-5, "result " + std::to_string(i));
}

// float64, first and second order, in eager mode (the native kernels) and for layer_norm in lazy
// mode too (its composite's second derivative).
TEST(NativeEagerKernels, GradientsPassFiniteDifferenceChecks) {
  for (bool lazy : {false, true}) {
    Mode mode(lazy);
    torch::manual_seed(4);
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::layer_norm(in[0], F::LayerNormFuncOptions({7}).weight(in[1]).bias(in[2]));
        },
        {gradcheck::randn({5, 7}), gradcheck::randn({7}), gradcheck::randn({7})}))
        << "lazy " << lazy;
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::layer_norm(in[0], F::LayerNormFuncOptions({3, 4}).eps(1e-2));
        },
        {gradcheck::randn({2, 3, 4})}))
        << "lazy " << lazy;
    if (lazy) continue;
    const int64_t before = kiln::stats().native_kernels;
    EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::softmax(in[0], 1); },
                                 {gradcheck::randn({5, 7})}));
    EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::log_softmax(in[0], -1); },
                                 {gradcheck::randn({3, 2, 9})}));
    EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::softmax(in[0], 0); },
                                 {gradcheck::randn({5, 7})}));
    EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::log_softmax(in[0], 1); },
                                 {gradcheck::randn({3, 4, 5})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::avg_pool2d(in[0], F::AvgPool2dFuncOptions({3, 2}).stride({2, 1}).padding(1).ceil_mode(true));
        },
        {gradcheck::randn({2, 3, 5, 4})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::avg_pool2d(in[0], F::AvgPool2dFuncOptions(3).stride(2).padding(1).count_include_pad(false));
        },
        {gradcheck::randn({1, 2, 5, 6})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::adaptive_avg_pool2d(in[0], F::AdaptiveAvgPool2dFuncOptions({3, 2}));
        },
        {gradcheck::randn({2, 2, 7, 5})}));
    EXPECT_TRUE(
        gradcheck::check([](const kiln::TensorList& in) { return torch::gelu(in[0]); }, {gradcheck::randn({4, 6})}));
    EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::gelu(in[0], "tanh"); },
                                 {gradcheck::randn({4, 6})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::conv2d(in[0], in[1], F::Conv2dFuncOptions().stride(2).padding({0, 1}).dilation({2, 1}));
        },
        {gradcheck::randn({2, 2, 7, 6}), gradcheck::randn({3, 2, 2, 3})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::max_pool2d(in[0], F::MaxPool2dFuncOptions(2).stride(1).padding(1).ceil_mode(true));
        },
        {gradcheck::randn({2, 3, 5, 4})}));
    EXPECT_TRUE(gradcheck::check(
        [](const kiln::TensorList& in) {
          return F::batch_norm(in[0], Tensor(), Tensor(),
                               F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).training(true));
        },
        {gradcheck::randn({4, 3, 2, 2}), gradcheck::randn({3}), gradcheck::randn({3})}));
    Tensor labels = torch::tensor({3, 0, -100, 6, 2});
    EXPECT_TRUE(gradcheck::check([&](const kiln::TensorList& in) { return F::cross_entropy(in[0], labels); },
                                 {gradcheck::randn({5, 7})}));
    EXPECT_TRUE(gradcheck::check(
        [&](const kiln::TensorList& in) {
          return F::cross_entropy(in[0], labels, F::CrossEntropyFuncOptions().reduction(torch::kNone));
        },
        {gradcheck::randn({5, 7})}));
    EXPECT_GT(kiln::stats().native_kernels, before);
  }
}

// Several steps of each optimizer on two parameters: eager mode's update kernels give lazy mode's
// parameters.
std::vector<std::vector<double>> optimizer_steps() {
  std::vector<std::vector<double>> out;
  for (int which = 0; which < 4; ++which) {
    torch::manual_seed(5);
    std::vector<Tensor> params = {torch::randn({17, 33}).requires_grad_(true), torch::randn({70}).requires_grad_(true)};
    std::unique_ptr<torch::optim::Optimizer> opt;
    if (which == 0)
      opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-2).weight_decay(0.1));
    if (which == 1) opt = std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-2));
    if (which == 2)
      opt = std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
    if (which == 3) opt = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1));
    for (int step = 0; step < 3; ++step) {
      opt->zero_grad();
      Tensor loss = (params[0].sin().sum() + (params[1] * params[1]).sum());
      loss.backward();
      opt->step();
    }
    for (const Tensor& p : params) out.push_back(p.to_vector<double>());
  }
  return out;
}

TEST(NativeEagerKernels, OptimizerUpdatesMatchLazyMode) {
  std::vector<std::vector<double>> lazy, eager;
  {
    Mode mode(true);
    lazy = optimizer_steps();
  }
  {
    Mode mode(false);
    eager = optimizer_steps();
    // 2 parameters x 3 steps x 4 optimizers, less SGD with momentum's first step (it makes the buffer).
    EXPECT_EQ(kiln::stats().native_kernels, 22);
  }
  ASSERT_EQ(lazy.size(), eager.size());
  for (size_t i = 0; i < lazy.size(); ++i) expect_close(eager[i], lazy[i], 1e-5, "parameter " + std::to_string(i));
}

// An in-place update bumps the version: a value saved for backward before the step is caught.
TEST(NativeEagerKernels, AnUpdateInPlaceBumpsTheVersion) {
  Mode mode(false);
  Tensor p = torch::randn({8}).requires_grad_(true);
  torch::optim::Adam adam({p}, torch::optim::AdamOptions(1e-2));
  (p * p).sum().backward();
  const int64_t version = p._version();
  adam.step();
  adam.step();
  EXPECT_GT(p._version(), version);
  EXPECT_EQ(kiln::stats().native_kernels, 2);
}

TEST(NativeEagerKernels, BadInputThrowsNamingTheOpAndShapes) {
  Mode mode(false);
  Tensor x = torch::randn({4, 5}, torch::requires_grad());
  try {
    F::cross_entropy(x, torch::tensor({0, 1, 7, 2}));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cross_entropy"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 5]"), std::string::npos) << m;
  }
  try {
    F::layer_norm(x, F::LayerNormFuncOptions({4}));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("layer_norm"), std::string::npos) << m;
    EXPECT_NE(m.find("[4, 5]"), std::string::npos) << m;
  }
  EXPECT_THROW(torch::softmax(x, 2), kiln::Error);
  Tensor images = torch::randn({2, 3, 4, 4}, torch::requires_grad());
  try {
    F::avg_pool2d(images, F::AvgPool2dFuncOptions(2).padding(2));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("avg_pool2d"), std::string::npos) << m;
    EXPECT_NE(m.find("pad should be at most half of kernel size"), std::string::npos) << m;
  }
  try {
    F::avg_pool2d(images, F::AvgPool2dFuncOptions(5));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("avg_pool2d"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3, 4, 4]"), std::string::npos) << m;
  }
  try {
    F::adaptive_avg_pool2d(images.flatten(), F::AdaptiveAvgPool2dFuncOptions(2));
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("adaptive_avg_pool2d"), std::string::npos) << m;
    EXPECT_NE(m.find("[96]"), std::string::npos) << m;
  }
  EXPECT_EQ(kiln::stats().native_kernels, 0);  // each was refused before running a kernel
}

}  // namespace
