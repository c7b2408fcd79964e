// A small libtorch training program: a classifier with a regression head, trained with Adam and
// then with SGD (momentum, weight decay). Built with kiln it includes <kiln/torch.h>; built with
// -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 it prints the reference output in
// tests/reference/train_small.txt. Nothing else differs between the two builds.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <iostream>

namespace F = torch::nn::functional;

// A shared trunk (Linear, LayerNorm, GELU) feeding a class head and a regression head.
struct NetImpl : torch::nn::Module {
  NetImpl(int64_t in, int64_t hidden, int64_t classes)
      : fc(register_module("fc", torch::nn::Linear(in, hidden))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        hidden_fc(register_module("hidden_fc", torch::nn::Linear(hidden, hidden))),
        classify(register_module("classify", torch::nn::Linear(hidden, classes))),
        regress(register_module("regress", torch::nn::Linear(hidden, 1))) {}

  // Returns the class logits and the regression output.
  std::pair<torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    x = torch::gelu(norm(fc(x)));
    x = F::gelu(hidden_fc(x), F::GELUFuncOptions().approximate("tanh")) + x;
    return {classify(x), regress(x)};
  }

  torch::nn::Linear fc{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear hidden_fc{nullptr}, classify{nullptr}, regress{nullptr};
};
TORCH_MODULE(Net);

int main() {
  torch::manual_seed(0);
  const int64_t n = 64, in = 8, hidden = 16, classes = 4;

  Net net(in, hidden, classes);
  auto x = torch::randn({n, in});
  auto labels = torch::randint(0, classes, {n});
  // A regression target the net can learn: a fixed projection of the inputs plus noise.
  auto w_true = torch::randn({in, 1});
  auto target = torch::tanh(x.matmul(w_true)) + 0.1 * torch::randn({n, 1});

  // One training step of `optimizer` on the sum of both losses; returns that sum.
  auto step = [&](torch::optim::Optimizer& optimizer) {
    optimizer.zero_grad();
    auto [logits, value] = net->forward(x);
    auto loss = F::cross_entropy(logits, labels) + 0.5 * F::mse_loss(value, target);
    loss.backward();
    optimizer.step();
    return loss;
  };

  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  for (int i = 1; i <= 30; ++i) {
    auto loss = step(adam);
    if (i % 5 == 0) std::cout << "adam step " << i << " loss " << loss.item<float>() << std::endl;
  }

  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(5e-2).momentum(0.9).weight_decay(1e-3));
  for (int i = 1; i <= 30; ++i) {
    auto loss = step(sgd);
    if (i % 5 == 0) std::cout << "sgd step " << i << " loss " << loss.item<float>() << std::endl;
  }

  {
    torch::NoGradGuard no_grad;
    net->eval();
    auto [logits, value] = net->forward(x);
    auto accuracy = logits.argmax(1).eq(labels).to(torch::kFloat).mean();
    std::cout << "accuracy " << accuracy.item<float>() << std::endl;
    std::cout << "mse " << F::mse_loss(value, target).item<float>() << std::endl;
  }
  std::cout << net->classify->weight << std::endl;
  std::cout << net->regress->bias << std::endl;
  std::cout << net->norm->weight << std::endl;
  return 0;
}
