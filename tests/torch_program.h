// A small libtorch 1.13 training program written only against libtorch's API (no kiln names).
// tests/torch_header_test.cpp compiles it through <kiln/torch.h>; the very same file compiles
// against the real libtorch (include <torch/torch.h> first), which is how the reference losses
// in that test were produced.
#pragma once
#include <string>
#include <vector>

namespace torch_program {

// A custom autograd function, libtorch style: an L2 penalty with a hand-written backward.
struct SquaredNorm : public torch::autograd::Function<SquaredNorm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x) {
    ctx->save_for_backward({x});
    return (x * x).sum();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto x = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * 2 * x};
  }
};

struct NetImpl : torch::nn::Module {
  NetImpl(int64_t in, int64_t hidden, int64_t classes)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(1e-5)))),
        head(register_module("head", torch::nn::Sequential(torch::nn::Linear(hidden, hidden), torch::nn::Tanh()))),
        fc2(register_module("fc2", torch::nn::Linear(torch::nn::LinearOptions(hidden, classes).bias(true)))) {}

  torch::Tensor forward(torch::Tensor x) {
    namespace F = torch::nn::functional;
    x = F::gelu(norm(fc1(x)), F::GELUFuncOptions().approximate("tanh"));
    x = head->forward(x);
    return fc2(x);
  }

  torch::nn::Linear fc1{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Sequential head{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(Net);

struct Result {
  std::vector<float> losses;
  float accuracy = 0;
  std::vector<std::string> parameter_names;
  double final_lr = 0;
};

inline Result train(int steps) {
  namespace F = torch::nn::functional;
  torch::manual_seed(0);
  torch::Device device(torch::kCPU);

  Net net(4, 16, 3);
  net->to(device);
  auto x = torch::randn({32, 4}).to(device);
  // Labels a fixed random projection assigns, so the net can fit them.
  auto projection = torch::randn({4, 3});
  auto y = torch::argmax(torch::matmul(x, projection), /*dim=*/1);

  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(2e-2).weight_decay(1e-4));
  torch::optim::StepLR scheduler(optimizer, /*step_size=*/10, /*gamma=*/0.5);

  Result result;
  net->train();
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    auto logits = net(x);
    auto loss = F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(0.05));
    auto total = loss + 1e-3 * SquaredNorm::apply(net->fc2->weight);
    total.backward();
    optimizer.step();
    scheduler.step();
    result.losses.push_back(loss.item<float>());
  }

  {
    torch::NoGradGuard no_grad;
    net->eval();
    auto predicted = net(x).argmax(1);
    result.accuracy = predicted.eq(y).to(torch::kFloat32).mean().item<float>();
  }
  for (const auto& p : net->named_parameters()) result.parameter_names.push_back(p.key());
  result.final_lr = static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr();
  return result;
}

}  // namespace torch_program
