// The MLP of the step benchmarks: 784-512-512-10 with Linear, LayerNorm and GELU twice, then
// Linear, written with libtorch's names (include <kiln/torch.h> or <torch/torch.h> first).
#pragma once

struct BenchMlpImpl : torch::nn::Module {
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  BenchMlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(784, 512));
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({512})));
    fc2 = register_module("fc2", torch::nn::Linear(512, 512));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({512})));
    fc3 = register_module("fc3", torch::nn::Linear(512, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::gelu(ln1(fc1(x)));
    x = torch::gelu(ln2(fc2(x)));
    return fc3(x);
  }
};
TORCH_MODULE(BenchMlp);
