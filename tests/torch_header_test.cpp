// <kiln/torch.h>: a libtorch program compiles unchanged and trains as it does under libtorch.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>

#include "torch_program.h"

namespace {
// The network of libtorch's "Using the C++ frontend" tutorial, as written there.
struct TutorialNet : torch::nn::Module {
  TutorialNet() {
    fc1 = register_module("fc1", torch::nn::Linear(784, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 32));
    fc3 = register_module("fc3", torch::nn::Linear(32, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1->forward(x.reshape({x.size(0), 784})));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = torch::relu(fc2->forward(x));
    x = torch::log_softmax(fc3->forward(x), /*dim=*/1);
    return x;
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
}  // namespace

TEST(TorchHeader, LibtorchProgramTrainsLikeLibtorch) {
  const torch_program::Result r = torch_program::train(30);
  // The same program built against libtorch 1.13 printed these losses: same seed, same initial
  // weights and data, same optimizer and schedule.
  const std::vector<float> libtorch_losses = {
      1.13321924f,  0.995664001f, 0.882646978f, 0.78002882f,  0.684118807f, 0.596905768f, 0.52106452f,  0.457084715f,
      0.40244326f,  0.354606062f, 0.313655853f, 0.280491829f, 0.266613841f, 0.254216522f, 0.243352368f, 0.234007105f,
      0.226028532f, 0.219216272f, 0.213460609f, 0.20875594f,  0.205100849f, 0.202418119f, 0.201376736f, 0.200476885f,
      0.19969584f,  0.199010789f, 0.198398754f, 0.197837889f, 0.197307944f, 0.196791291f};
  ASSERT_EQ(r.losses.size(), libtorch_losses.size());
  for (size_t i = 0; i < r.losses.size(); ++i) EXPECT_NEAR(r.losses[i], libtorch_losses[i], 2e-4) << "step " << i;
  for (size_t i = 1; i < r.losses.size(); ++i) EXPECT_LT(r.losses[i], r.losses[i - 1]) << "step " << i;
  EXPECT_FLOAT_EQ(r.accuracy, 1.0f);
  EXPECT_DOUBLE_EQ(r.final_lr, 0.005);
  EXPECT_EQ(r.parameter_names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "norm.weight", "norm.bias",
                                                         "head.0.weight", "head.0.bias", "fc2.weight", "fc2.bias"}));
}

// The names libtorch programs use, resolved through the torch:: and at:: aliases.
TEST(TorchHeader, LibtorchNamesResolve) {
  torch::Tensor t = torch::ones({2, 2}, torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true));
  at::Tensor same = t;
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE((t * 2).requires_grad());
  }
  torch::autograd::variable_list grads = torch::autograd::grad({(t * t).sum()}, {t});
  torch::autograd::tensor_list also = grads;
  EXPECT_TRUE(torch::allclose(also[0], 2 * same));
  torch::Device device("cpu");
  EXPECT_TRUE(device.is_cpu());
  EXPECT_EQ(torch::Device("cpu:0").index(), 0);
  EXPECT_THROW(t.to(torch::Device("cuda:0")), torch::Error);  // named, but no CUDA backend yet
  {
    torch::InferenceMode guard;
    EXPECT_FALSE((t * 2).requires_grad());
  }
  EXPECT_FALSE(torch::cuda::is_available());
  EXPECT_EQ(t.to(device).dtype(), torch::kFloat);
  EXPECT_EQ(torch::zeros({1}, torch::TensorOptions().device(device)).numel(), 1);
  torch::set_num_threads(1);
  torch::nn::Sequential seq(torch::nn::Linear(2, 2), torch::nn::Functional(torch::relu));
  torch::OrderedDict<std::string, torch::Tensor> params = seq->named_parameters();
  EXPECT_EQ(params.size(), 2u);
  torch::optim::SGD sgd(seq->parameters(), /*lr=*/0.1);
  EXPECT_DOUBLE_EQ(sgd.param_groups()[0].options().get_lr(), 0.1);
  namespace F = torch::nn::functional;
  EXPECT_EQ(F::cross_entropy(torch::zeros({2, 3}), torch::tensor({0, 2}, torch::kLong),
                             F::CrossEntropyFuncOptions().reduction(torch::kNone))
                .numel(),
            2);
  torch::nn::init::zeros_(seq[0]->as<torch::nn::Linear>()->weight);
  EXPECT_EQ(seq->at<torch::nn::LinearImpl>(0).weight.abs().sum().item<float>(), 0.0f);
}

TEST(TorchHeader, TutorialLoopRuns) {
  torch::manual_seed(1);
  auto net = std::make_shared<TutorialNet>();
  torch::optim::SGD optimizer(net->parameters(), /*lr=*/0.01);
  auto images = torch::rand({8, 1, 28, 28});
  auto labels = torch::randint(10, {8});
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    optimizer.zero_grad();
    torch::Tensor prediction = net->forward(images);
    torch::Tensor loss = torch::nll_loss(prediction, labels);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<float>());
  }
  EXPECT_EQ(net->parameters().size(), 6u);
  for (float l : losses) EXPECT_TRUE(std::isfinite(l));
  net->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(net->forward(images).sizes(), torch::IntArrayRef({8, 10}));
}
