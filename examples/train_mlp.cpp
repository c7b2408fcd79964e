// The main training job (scripts/train.sh) until the Fashion-MNIST CLI exists: an MLP
// 784-256-10 (Linear, LayerNorm, GELU, Linear) trained with Adam on a synthetic but learnable
// 10-class problem: each class is a gaussian cluster (unit variance) around its own random mean,
// the means about 6 standard deviations apart, so that the clusters overlap slightly.
// Prints per epoch the mean loss, the training accuracy and samples per second, then the line
// `accuracy <held-out accuracy> seconds_per_epoch <s>`. Usage: train_mlp [--epochs N].
// Built with -DKILN_EXAMPLE_LIBTORCH it runs on libtorch instead, for comparison.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace F = torch::nn::functional;

struct MLPImpl : torch::nn::Module {
  MLPImpl(int64_t in, int64_t hidden, int64_t classes)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, classes))) {}

  torch::Tensor forward(const torch::Tensor& x) { return fc2(F::gelu(norm(fc1(x)))); }

  torch::nn::Linear fc1{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(MLP);

// n samples: uniformly drawn labels, inputs x ~ N(means[label], 1).
std::pair<torch::Tensor, torch::Tensor> make_data(int64_t n, const torch::Tensor& means) {
  auto labels = torch::randint(0, means.size(0), {n});
  auto x = means.index_select(0, labels) + torch::randn({n, means.size(1)});
  return {x, labels};
}

int main(int argc, char** argv) {
  int epochs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
      epochs = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: train_mlp [--epochs N]" << std::endl;
      return 2;
    }
  }
  const int64_t features = 784, hidden = 256, classes = 10, batch = 128;
  const int64_t train_size = 16384, test_size = 4096;

  torch::manual_seed(0);
  const auto means = torch::randn({classes, features}) * 0.15;
  torch::Tensor x_train, y_train, x_test, y_test;
  std::tie(x_train, y_train) = make_data(train_size, means);
  std::tie(x_test, y_test) = make_data(test_size, means);

  MLP model(features, hidden, classes);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));

  double total_seconds = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model->train();
    auto order = torch::randperm(train_size);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, batches = 0;
    for (int64_t first = 0; first + batch <= train_size; first += batch) {
      auto index = order.narrow(0, first, batch);
      auto x = x_train.index_select(0, index), y = y_train.index_select(0, index);
      optimizer.zero_grad();
      auto logits = model(x);
      auto loss = F::cross_entropy(logits, y);
      loss.backward();
      optimizer.step();
      auto hits = logits.detach().argmax(1).eq(y).sum();
      loss_sum += loss.item<float>();
      correct += hits.item<int64_t>();
      seen += batch;
      ++batches;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total_seconds += seconds;
    std::cout << "epoch " << epoch << " loss " << loss_sum / batches << " train_accuracy " << double(correct) / seen
              << " samples_per_second " << seen / seconds << std::endl;
  }

  torch::NoGradGuard no_grad;
  model->eval();
  const float accuracy = model(x_test).argmax(1).eq(y_test).to(torch::kFloat).mean().item<float>();
  std::cout << "accuracy " << accuracy << " seconds_per_epoch " << (epochs > 0 ? total_seconds / epochs : 0.0)
            << std::endl;
  return 0;
}
