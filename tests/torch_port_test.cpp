// The small things that stop a libtorch program from porting: in-place methods through a const
// handle, libtorch's checks, naming a CUDA device, nn::init's fills. Values printed by libtorch
// 1.13 for the same seeds and inputs.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "nn_test_util.h"

using nn_test::expect_error;
using nn_test::expect_gradient_matches;
using nn_test::expect_values;

TEST(TorchPort, InPlaceMethodsWriteThroughAConstHandle) {
  torch::Tensor w = torch::ones({3}, torch::requires_grad());
  (w * torch::tensor({1.0f, 2.0f, 3.0f})).sum().backward();
  const torch::Tensor& grad = w.grad();  // libtorch's grad() is a const reference
  grad.mul_(2);
  expect_values(w.grad(), {2, 4, 6});
  w.grad().add_(torch::ones({3}));
  expect_values(w.grad(), {3, 5, 7});
  w.grad().zero_();
  expect_values(w.grad(), {0, 0, 0});
  const torch::Tensor x = torch::tensor({0.5, -1.0, 2.0});
  x.neg_().exp_();  // a chain of in-place methods, as in libtorch
  expect_values(x, {std::exp(-0.5), std::exp(1.0), std::exp(-2.0)});
  x.log_().abs_().pow_(2).clamp_max_(3.5).clamp_min_(0.3);
  expect_values(x, {0.3, 1.0, 3.5});
  x.tanh_();
  expect_values(x, {std::tanh(0.3), std::tanh(1.0), std::tanh(3.5)});
  x.sigmoid_();
  expect_values(x, {1 / (1 + std::exp(-std::tanh(0.3))), 1 / (1 + std::exp(-std::tanh(1.0))),
                    1 / (1 + std::exp(-std::tanh(3.5)))});
}

TEST(TorchPort, InPlaceMethodsDifferentiate) {
  // y = exp_(x * 2) then y.pow_(2) then y.neg_(): the history follows the writes.
  expect_gradient_matches(
      [](const torch::Tensor& x) {
        torch::Tensor y = x * 2;
        y.exp_().pow_(2).neg_().tanh_();
        return y.sum();
      },
      nn_test::doubles({-0.4, 0.1, 0.3}, {3}));
  // A leaf that requires grad refuses in-place writes, as in libtorch.
  torch::Tensor leaf = torch::ones({2}, torch::requires_grad());
  expect_error([&] { leaf.exp_(); }, {"leaf Variable"});
}

TEST(TorchPort, RandomFillsDrawLibtorchsStream) {
  torch::manual_seed(0);
  torch::Tensor u = torch::empty({4});
  u.uniform_(-2, 3);
  expect_values(u, {0.481282949, 1.84110904, -1.5576129, -1.33984756});
  torch::Tensor n = torch::empty({3}, torch::kDouble);
  n.normal_(1, 2);
  expect_values(n, {-3.35757876, 2.13686255, -1.16904468}, 1e-7);
  expect_error([&] { u.uniform_(1, 0); }, {"uniform_", "from=1"});
  expect_error([&] { torch::empty({2}, torch::kLong).normal_(); }, {"normal_", "floating"});
}

TEST(TorchPort, InitFillsAsLibtorch) {
  torch::manual_seed(0);
  torch::Tensor o = torch::empty({3, 5});
  torch::nn::init::orthogonal_(o, 1.5);
  expect_values(
      o,
      {0.783346117, -0.149160907, -1.10756028, 0.288954914, -0.551303387, -0.80471921, 0.315843642, -0.214341342,
       -0.538152814, -1.08033288, -0.661374688, 0.099390924, -0.0684826821, 1.33462918, -0.129536822},
      1e-5, 1e-6);
  torch::Tensor o2 = torch::empty({4, 2, 2});
  torch::nn::init::orthogonal_(o2);
  expect_values(
      o2,
      {-0.664093375, 0.410728812, 0.0941965729, 0.617582977, 0.47589165, -0.229838833, 0.6305632, 0.568411171,
       -0.110731803, 0.444386691, 0.718016207, -0.524129331, 0.565902412, 0.762231171, -0.279230505, 0.144181922},
      1e-5, 1e-6);
  torch::Tensor s = torch::empty({5, 3});
  torch::nn::init::sparse_(s, 0.4, 1.0);
  expect_values(s, {0.122701243, 0.191869423, 0, 0, -0.791102707, -0.0208794735, -0.718480051, 0, -1.31252193,
                    0.191995069, 0.542771339, -2.21877933, 0, 0, 0});
  torch::Tensor d = torch::empty({2, 3, 3});
  torch::nn::init::dirac_(d);
  expect_values(d, {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0});
  torch::Tensor e = torch::empty({2, 3});
  torch::nn::init::eye_(e);
  expect_values(e, {1, 0, 0, 0, 1, 0});
  expect_error([&] { torch::nn::init::eye_(torch::empty({2, 2, 2})); }, {"eye_", "[2, 2, 2]"});
  expect_error([&] { torch::nn::init::dirac_(torch::empty({2, 2})); }, {"dirac_", "[2, 2]"});
  expect_error([&] { torch::nn::init::orthogonal_(torch::empty({3})); }, {"orthogonal_", "[3]"});
  expect_error([&] { torch::nn::init::sparse_(torch::empty({3, 2, 1}), 0.5); }, {"sparse_", "[3, 2, 1]"});
}

TEST(TorchPort, ChecksThrowKilnErrors) {
  try {
    TORCH_CHECK(1 == 2);
    ADD_FAILURE() << "TORCH_CHECK did not throw";
  } catch (const c10::Error& e) {
    EXPECT_STREQ(e.what(), "Expected 1 == 2 to be true, but got false.");
  }
  try {
    TORCH_CHECK(false, "bad ", 3);
    ADD_FAILURE() << "TORCH_CHECK did not throw";
  } catch (const kiln::Error& e) {
    EXPECT_STREQ(e.what(), "bad 3");
  }
  TORCH_CHECK(true, "never built");
  EXPECT_THROW(TORCH_INTERNAL_ASSERT(2 < 1), kiln::Error);
  EXPECT_THROW(AT_ASSERT(false), kiln::Error);
  EXPECT_THROW(AT_ERROR("gone ", 1), c10::Error);
  EXPECT_TRUE(std::isnan(std::nan("")));  // <cmath> comes with <kiln/torch.h>, as with <torch/torch.h>
}

TEST(TorchPort, CudaCanBeNamedButNotUsed) {
  EXPECT_FALSE(torch::cuda::is_available());
  EXPECT_EQ(torch::cuda::device_count(), 0);
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);
  EXPECT_TRUE(device.is_cpu());
  torch::Tensor x = torch::ones({2}).to(device);
  EXPECT_EQ(x.device(), torch::Device(torch::kCPU));
  EXPECT_TRUE(x.is_cpu());
  EXPECT_FALSE(x.is_cuda());
  EXPECT_EQ(torch::Device("cuda:1").index(), 1);
  EXPECT_TRUE(torch::Device("cuda").is_cuda());
  EXPECT_EQ(torch::Device("cpu:0").str(), "cpu:0");
  const torch::Device cuda(torch::kCUDA);
  expect_error([&] { x.to(cuda); }, {"CUDA", "is_available"});
  expect_error([&] { x.cuda(); }, {"to", "CUDA is not available"});
  expect_error([&] { torch::zeros({2}, torch::kCUDA); }, {"CUDA"});
  expect_error([&] { torch::zeros({2}, torch::TensorOptions().device(torch::kCUDA)); }, {"TensorOptions::device"});
  torch::nn::Linear net(2, 3);
  expect_error([&] { net->to(cuda); }, {"Module::to", "CUDA"});
  expect_error([&] { torch::Device("tpu"); }, {"Device", "tpu"});
  expect_error([&] { torch::Device("cuda:x"); }, {"Device", "cuda:x"});
  // Nothing broke: the module and tensor still work on the CPU.
  net->to(device);
  EXPECT_EQ(net->forward(x).sizes(), torch::IntArrayRef({3}));
}

TEST(TorchPort, DropoutAndBernoulliDrawLibtorchsMasks) {
  // So that a program with dropout prints the same losses under kiln and libtorch.
  torch::manual_seed(3);
  expect_values(torch::dropout(torch::ones({2, 6}), 0.5, true), {2, 2, 0, 2, 0, 0, 2, 2, 2, 0, 2, 0});
  expect_values(torch::empty({7}).bernoulli_(0.3), {0, 0, 0, 1, 1, 0, 0});
  expect_values(torch::bernoulli(torch::tensor({0.1, 0.9, 0.5, 0.5, 0.2, 0.7})), {0, 1, 0, 1, 0, 1});
  expect_error([&] { torch::bernoulli(torch::tensor({0.5, 1.5})); }, {"bernoulli", "[0, 1]"});
  expect_error([&] { torch::ones({2}).bernoulli_(-0.1); }, {"bernoulli_", "[2]"});
}
