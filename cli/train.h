// `kiln train`: trains the MLP or the CNN of cli/models.h on Fashion-MNIST, with a progress bar
// per epoch and the test accuracy after each; the last line printed is
// `accuracy <test accuracy> seconds_per_epoch <seconds>`.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::cli {

struct TrainOptions {
  std::string model = "mlp";  // mlp | cnn
  int epochs = 2;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";  // adam | adamw | sgd | rmsprop
  int threads = 0;                 // 0: kiln's default (KILN_NUM_THREADS or all cores)
  std::string save;                // safetensors path for the trained weights, if given
  uint64_t seed = 0;
  std::string data_dir;        // default: kiln::data::fashion_mnist_dir()
  std::string device = "cpu";  // where the model and batches live: cpu, cuda or cuda:N
};

// Returns the process exit status.
int train(const TrainOptions& options);

}  // namespace kiln::cli
