// Eager mode (KILN_LAZY=0) runs each of libtorch's ops as one unit (tracer::EagerGroup): a
// composite op (softmax, layer_norm, cross_entropy, conv2d, batch_norm, max_pool2d, an optimizer's
// update of a parameter) and the backward of one is a single flush, whose kernels run unfused,
// chunk by chunk (codegen/tiled_kernels.h). Its results are lazy mode's, it never compiles, and its
// gradients pass the float64 finite-difference checks. The tiled executor itself matches the
// interpreter on row kernels, window reductions and broadcast reads.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <functional>

#include "gradcheck.h"
#include "runtime/config.h"
#include "runtime/stats.h"
#include "tracer/storage.h"

namespace {

using kiln::Tensor;

// Sets eager or lazy mode for one scope, restoring the mode and backend after.
struct Mode {
  explicit Mode(bool lazy, const char* backend = nullptr) : lazy_(kiln::is_lazy()), backend_(kiln::config().backend) {
    kiln::sync();
    kiln::set_lazy(lazy);
    if (backend) kiln::config().backend = backend;
    kiln::reset_stats();
  }
  ~Mode() {
    kiln::sync();
    kiln::set_lazy(lazy_);
    kiln::config().backend = backend_;
  }
  bool lazy_;
  std::string backend_;
};

bool computed(const Tensor& t) { return t.unsafeGetTensorImpl()->storage->node->computed(); }

int64_t flushes() { return kiln::stats().flushes; }

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << what << " value " << i;
}

TEST(EagerGroups, ACompositeOpIsOneFlush) {
  Mode mode(false);
  torch::manual_seed(0);
  Tensor x = torch::randn({8, 16});
  Tensor labels = torch::randint(0, 16, {8});
  // (softmax, log_softmax, layer_norm and cross_entropy of a computed input run a native kernel
  // and flush nothing: tests/native_ops_test.cpp)
  const auto one_flush = [&](const char* what, const std::function<Tensor()>& op) {
    const int64_t before = flushes();
    Tensor y = op();
    EXPECT_LE(flushes() - before, 1) << what;
    EXPECT_TRUE(computed(y)) << what;
  };
  one_flush("softmax", [&] { return torch::softmax(x, 1); });
  one_flush("log_softmax", [&] { return torch::log_softmax(x, 1); });
  one_flush("layer_norm",
            [&] { return torch::nn::functional::layer_norm(x, torch::nn::functional::LayerNormFuncOptions({16})); });
  one_flush("gelu", [&] { return torch::gelu(x); });
  one_flush("cross_entropy", [&] { return torch::nn::functional::cross_entropy(x, labels); });
  // A primitive op is still a flush of its own.
  const int64_t before = flushes();
  Tensor z = x.exp();
  EXPECT_EQ(flushes() - before, 1);
  EXPECT_TRUE(computed(z));
}

// A layer norm's backward is some twenty primitive derivatives; eager mode runs them as one
// group (the layer_norm's), not one flush each.
TEST(EagerGroups, TheBackwardOfACompositeOpIsOneGroup) {
  Mode mode(false);
  torch::manual_seed(0);
  Tensor x = torch::randn({4, 32}, torch::requires_grad());
  Tensor y = torch::nn::functional::layer_norm(x, torch::nn::functional::LayerNormFuncOptions({32}));
  Tensor g = torch::randn({4, 32});
  const int64_t before = flushes();
  y.backward(g);
  EXPECT_LE(flushes() - before, 3);  // the group, and the gradient's accumulation into x.grad
  EXPECT_TRUE(computed(x.grad()));
}

// A small MLP and CNN trained two steps, with Adam: eager mode gives lazy mode's losses, gradients
// and parameters, and compiles or loads no kernel.
std::vector<std::vector<double>> train_two_steps() {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(32, 64), torch::nn::LayerNorm(torch::nn::LayerNormOptions({64})),
                            torch::nn::GELU(), torch::nn::Linear(64, 10));
  // No bias before the batch norm: its gradient is zero up to rounding, which Adam would amplify.
  torch::nn::Sequential cnn(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1).bias(false)),
                            torch::nn::BatchNorm2d(4), torch::nn::ReLU(), torch::nn::MaxPool2d(2), torch::nn::Flatten(),
                            torch::nn::Linear(4 * 4 * 4, 10));
  Tensor x = torch::randn({16, 32}), images = torch::randn({8, 1, 8, 8});
  Tensor y = torch::randint(0, 10, {16}), image_labels = torch::randint(0, 10, {8});
  std::vector<std::vector<double>> out;
  for (auto* net : {&mlp, &cnn}) {
    torch::optim::Adam adam((*net)->parameters(), torch::optim::AdamOptions(1e-2));
    for (int step = 0; step < 2; ++step) {
      adam.zero_grad();
      Tensor loss = net == &mlp ? torch::nn::functional::cross_entropy((*net)->forward(x), y)
                                : torch::nn::functional::cross_entropy((*net)->forward(images), image_labels);
      loss.backward();
      out.push_back(loss.to_vector<double>());
      for (const auto& p : (*net)->parameters()) out.push_back(p.grad().to_vector<double>());
      adam.step();
    }
    for (const auto& p : (*net)->parameters()) out.push_back(p.to_vector<double>());
  }
  return out;
}

TEST(EagerGroups, TrainingStepsMatchLazyModeAndNeverCompile) {
  std::vector<std::vector<double>> lazy, eager;
  {
    Mode mode(true);
    lazy = train_two_steps();
  }
  kiln::Stats s;
  {
    Mode mode(false);
    eager = train_two_steps();
    s = kiln::stats();
  }
  EXPECT_EQ(s.kernels_compiled, 0);
  EXPECT_EQ(s.kernels_loaded, 0);
  EXPECT_EQ(s.nodes_interpreted, 0);
  EXPECT_GT(s.kernels_unfused, 0);
  ASSERT_EQ(lazy.size(), eager.size());
  for (size_t i = 0; i < lazy.size(); ++i) expect_close(eager[i], lazy[i], 2e-4, "result " + std::to_string(i));
}

// The gradients of the composite ops that run as groups, in eager mode, in float64 (and their
// second derivatives, whose backward runs grouped too).
TEST(EagerGroups, GradientsPassFiniteDifferenceChecks) {
  Mode mode(false);
  torch::manual_seed(1);
  namespace F = torch::nn::functional;
  const Tensor labels = torch::randint(0, 7, {5});
  EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::softmax(in[0], 1); },
                               {gradcheck::randn({5, 7})}));
  EXPECT_TRUE(gradcheck::check([](const kiln::TensorList& in) { return torch::log_softmax(in[0], 0); },
                               {gradcheck::randn({5, 7})}));
  gradcheck::Options no_second_order;
  no_second_order.gradgrad = false;
  EXPECT_TRUE(gradcheck::check(
      [](const kiln::TensorList& in) {
        return F::layer_norm(in[0], F::LayerNormFuncOptions({7}).weight(in[1]).bias(in[2]));
      },
      {gradcheck::randn({5, 7}), gradcheck::randn({7}), gradcheck::randn({7})}));
  EXPECT_TRUE(gradcheck::check([&](const kiln::TensorList& in) { return F::cross_entropy(in[0], labels); },
                               {gradcheck::randn({5, 7})}));
  EXPECT_TRUE(
      gradcheck::check([](const kiln::TensorList& in) { return torch::gelu(in[0]); }, {gradcheck::randn({3, 4})}));
  EXPECT_TRUE(gradcheck::check(
      [](const kiln::TensorList& in) {
        return F::batch_norm(in[0], Tensor(), Tensor(),
                             F::BatchNormFuncOptions().weight(in[1]).bias(in[2]).training(true));
      },
      {gradcheck::randn({4, 3, 2, 2}), gradcheck::randn({3}), gradcheck::randn({3})}, no_second_order));
  EXPECT_TRUE(
      gradcheck::check([](const kiln::TensorList& in) { return F::max_pool2d(in[0], F::MaxPool2dFuncOptions(2)); },
                       {gradcheck::randn({2, 2, 4, 4})}, no_second_order));
  EXPECT_TRUE(gradcheck::check(
      [](const kiln::TensorList& in) { return F::conv2d(in[0], in[1], F::Conv2dFuncOptions().padding(1)); },
      {gradcheck::randn({2, 2, 5, 5}), gradcheck::randn({3, 2, 3, 3})}, no_second_order));
  EXPECT_EQ(kiln::stats().kernels_compiled, 0);
}

// The tiled executor (KILN_BACKEND=unfused runs every kernel unfused) against the interpreter:
// row kernels over transposed and broadcast reads, rows longer than a chunk, window reductions
// whose reduced dims lie between kept ones, batch-norm statistics, integer and float64 rows.
std::vector<std::vector<double>> row_programs() {
  torch::manual_seed(2);
  std::vector<std::vector<double>> out;
  auto keep = [&](const Tensor& t) { out.push_back(t.contiguous().to_vector<double>()); };
  Tensor a = torch::randn({300, 37}).t();  // [37, 300], strided
  keep(torch::softmax(a, 1));
  keep(torch::log_softmax(a * 3 + torch::randn({300}), 1));
  Tensor wide = torch::randn({3, 20000});  // rows past a chunk
  keep(wide - wide.amax({1}, true) + wide.sum({1}, true) / 20000);
  Tensor b = torch::randn({5, 7, 129});
  keep(torch::nn::functional::layer_norm(b, torch::nn::functional::LayerNormFuncOptions({7, 129})));
  Tensor windows = torch::randn({2, 3, 4, 2, 5, 2});
  keep(windows.amax({3, 5}) * 2 + 1);
  Tensor images = torch::randn({4, 3, 6, 6});
  Tensor mean = images.mean({0, 2, 3}, true);
  keep(((images - mean) * (images - mean)).mean({0, 2, 3}, true).sqrt() + mean);
  Tensor counts = torch::randint(-50, 50, {9, 31});
  keep(counts.sum(1) + counts.amax(1, true).squeeze(1));
  Tensor d = torch::randn({6, 50}, torch::kFloat64);
  keep(torch::softmax(d, 1) * torch::exp(d - d.mean({1}, true)));
  return out;
}

TEST(TiledKernels, RowKernelsAndWindowReductionsMatchTheInterpreter) {
  std::vector<std::vector<double>> tiled, reference;
  kiln::Stats s;
  {
    Mode mode(true, "unfused");
    tiled = row_programs();
    s = kiln::stats();
  }
  {
    Mode mode(true, "interp");
    reference = row_programs();
  }
  // A tiled kernel is one launch for its nodes: fewer launches than nodes computed.
  EXPECT_LT(s.kernel_launches, s.nodes_executed);
  EXPECT_EQ(s.nodes_interpreted, 0);
  ASSERT_EQ(tiled.size(), reference.size());
  for (size_t i = 0; i < tiled.size(); ++i) expect_close(tiled[i], reference[i], 1e-5, "program " + std::to_string(i));
}

}  // namespace
