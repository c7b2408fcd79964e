// The fixture of tests that run the CUDA backend on the fake device (cuda_fake_driver.h): on for
// the test, off after; skipped where no host C++ compiler builds the kernels' host emulation.
// And a training step that the CUDA tests time.
#pragma once
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cstdlib>

#include "cuda_fake_driver.h"
#include "tracer/storage.h"

struct FakeCudaBackend : ::testing::Test {
  FakeCudaBackend() { kiln_test::use_fake_cuda(true); }
  ~FakeCudaBackend() override { kiln_test::use_fake_cuda(false); }
  void SetUp() override {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  }
};

// The small MLP training step that the CUDA tests time (Linear, LayerNorm, GELU, Linear; MSE
// loss; Adam), on `device`.
struct MlpStep {
  explicit MlpStep(const torch::Device& device)
      : model(make_model(device)),
        optimizer(model->parameters(), torch::optim::AdamOptions(1e-2)),
        x(torch::randn({4, 16}).to(device)),
        target(torch::randn({4, 8}).to(device)) {}
  // One step, flushed; its loss.
  torch::Tensor operator()() {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->forward(x), target);
    loss.backward();
    optimizer.step();
    kiln::tracer::flush();
    return loss;
  }
  static torch::nn::Sequential make_model(const torch::Device& device) {
    torch::manual_seed(21);
    torch::nn::Sequential model(torch::nn::Linear(16, 32), torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})),
                                torch::nn::GELU(), torch::nn::Linear(32, 8));
    model->to(device);
    return model;
  }
  torch::nn::Sequential model;
  torch::optim::Adam optimizer;
  const torch::Tensor x, target;
};
