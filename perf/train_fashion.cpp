// The Fashion-MNIST training loop of `kiln train`, written once against libtorch's API and built
// twice: `train_fashion` (kiln, through <kiln/torch.h>) and `train_fashion_libtorch` (libtorch
// 1.13, -DKILN_BENCH_LIBTORCH). Same models (cli/models.h), optimizer (Adam 1e-3), batch size and
// data; prints per epoch the training seconds and the test accuracy, and last
// `accuracy <a> seconds_per_epoch <s>`. Usage: train_fashion [mlp|cnn] [epochs] [batch size].
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/models.h"
#include "frontend/data/idx.h"

namespace {

// Images as float32 [N, 1, 28, 28] normalized like `kiln train`, labels as int64 [N].
std::pair<torch::Tensor, torch::Tensor> load(const std::string& dir, const char* images, const char* labels) {
  auto x = kiln::data::read_idx(kiln::data::find_idx_file(dir, images));
  auto y = kiln::data::read_idx(kiln::data::find_idx_file(dir, labels));
  std::vector<float> pixels(x.data.begin(), x.data.end());
  std::vector<int64_t> classes(y.data.begin(), y.data.end());
  const int64_t n = x.dims[0];
  auto image_tensor = torch::from_blob(pixels.data(), {n, 1, x.dims[1], x.dims[2]}, torch::kFloat).clone();
  auto label_tensor = torch::from_blob(classes.data(), {n}, torch::kLong).clone();
  return {(image_tensor / 255.0 - fashion::kPixelMean) / fashion::kPixelStd, label_tensor};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "mlp";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 1;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 64;
  const std::string dir = kiln::data::fashion_mnist_dir();
  auto [train_x, train_y] = load(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte");
  auto [test_x, test_y] = load(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");

  torch::manual_seed(0);
  torch::nn::Sequential model = model_name == "cnn" ? fashion::make_cnn() : fashion::make_mlp();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  const int64_t n = train_x.size(0);
  double total = 0, accuracy = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    model->train();
    auto order = torch::randperm(n);
    double loss_sum = 0;
    for (int64_t first = 0; first < n; first += batch) {
      auto index = order.narrow(0, first, std::min(batch, n - first));
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model->forward(train_x.index_select(0, index)),
                                                       train_y.index_select(0, index));
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total += seconds;
    torch::NoGradGuard no_grad;
    model->eval();
    int64_t correct = 0;
    for (int64_t first = 0; first < test_x.size(0); first += 1000) {
      auto logits = model->forward(test_x.narrow(0, first, 1000));
      correct += logits.argmax(1).eq(test_y.narrow(0, first, 1000)).sum().item<int64_t>();
    }
    accuracy = double(correct) / double(test_x.size(0));
    std::printf("epoch %d seconds %.2f loss %.4f accuracy %.4f\n", epoch, seconds,
                loss_sum / double((n + batch - 1) / batch), accuracy);
    std::fflush(stdout);
  }
  std::printf("accuracy %.4f seconds_per_epoch %.2f\n", accuracy, total / epochs);
  return 0;
}
