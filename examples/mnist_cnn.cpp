// libtorch's MNIST example (pytorch/examples, cpp/mnist) as a user writes it: a CNN with
// Dropout2d read through torch::data, trained with SGD and momentum, tested with an NLL loss
// summed over the test set, and a checkpoint of the model and the optimizer after each epoch
// (a run that finds one resumes from it). Built with kiln it includes <kiln/torch.h>; built with
// -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 it printed tests/reference/mnist_cnn.txt.
//
//   mnist_cnn [DATA_DIR [EPOCHS [BATCHES_PER_EPOCH [CHECKPOINT_DIR]]]]
//
// DATA_DIR holds the four MNIST-format IDX files (Fashion-MNIST by default; libtorch reads them
// uncompressed only). BATCHES_PER_EPOCH 0 trains on every batch. Seconds per epoch go to stderr.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

struct Net : torch::nn::Module {
  Net()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*training=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

template <typename DataLoader>
void train(size_t epoch, Net& model, DataLoader& data_loader, torch::optim::Optimizer& optimizer, size_t batches) {
  model.train();
  size_t batch_idx = 0;
  for (auto& batch : data_loader) {
    if (batches > 0 && batch_idx >= batches) continue;  // libtorch's loader must be run to its end
    optimizer.zero_grad();
    auto output = model.forward(batch.data);
    auto loss = torch::nll_loss(output, batch.target);
    AT_ASSERT(!std::isnan(loss.template item<float>()));
    loss.backward();
    optimizer.step();
    if (batch_idx++ % 10 == 0)
      std::printf("Train Epoch: %zu [%5zu] Loss: %.4f\n", epoch, batch_idx * batch.data.size(0),
                  loss.template item<float>());
  }
}

template <typename DataLoader>
void test(Net& model, DataLoader& data_loader, size_t dataset_size) {
  torch::NoGradGuard no_grad;
  model.eval();
  double test_loss = 0;
  int32_t correct = 0;
  for (const auto& batch : data_loader) {
    auto output = model.forward(batch.data);
    test_loss += torch::nll_loss(output, batch.target, /*weight=*/{}, torch::Reduction::Sum).template item<float>();
    auto pred = output.argmax(1);
    correct += pred.eq(batch.target).sum().template item<int64_t>();
  }
  test_loss /= dataset_size;
  std::printf("Test set: Average loss: %.4f | Accuracy: %.3f\n", test_loss,
              static_cast<double>(correct) / dataset_size);
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

int main(int argc, char** argv) {
  const std::string data_root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const size_t epochs = argc > 2 ? std::stoul(argv[2]) : 10;
  const size_t batches = argc > 3 ? std::stoul(argv[3]) : 0;
  const std::string checkpoint_dir = argc > 4 ? argv[4] : ".";
  const int64_t train_batch_size = 64, test_batch_size = 1000;
  torch::manual_seed(1);

  auto model = std::make_shared<Net>();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
  const std::string model_path = checkpoint_dir + "/mnist_cnn_model.pt";
  const std::string optimizer_path = checkpoint_dir + "/mnist_cnn_optimizer.pt";
  if (exists(model_path) && exists(optimizer_path)) {
    torch::load(model, model_path);
    torch::load(optimizer, optimizer_path);
    std::printf("Resumed from the checkpoint in %s\n", checkpoint_dir.c_str());
  }

  auto train_dataset = torch::data::datasets::MNIST(data_root)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), torch::data::DataLoaderOptions().batch_size(train_batch_size).workers(2));
  auto test_dataset = torch::data::datasets::MNIST(data_root, torch::data::datasets::MNIST::Mode::kTest)
                          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), test_batch_size);

  for (size_t epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    train(epoch, *model, *train_loader, optimizer, batches);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "epoch " << epoch << ": " << seconds << " s training\n";
    test(*model, *test_loader, test_dataset_size);
    torch::save(model, model_path);
    torch::save(optimizer, optimizer_path);
  }
}
