// libtorch's MNIST example (examples/cpp/mnist) shrunk to a small MLP: the data come through
// torch::data (MNIST, Normalize, Stack, make_data_loader with a RandomSampler and two workers),
// so the losses printed depend on the sampler drawing libtorch's order after manual_seed. It reads
// the test split of the MNIST layout in argv[1] (default: Debian's Fashion-MNIST). Built with
// -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 (whose MNIST wants the files uncompressed) it
// printed tests/reference/train_mnist.txt.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int64_t kBatchSize = 64;
  torch::manual_seed(1);
  torch::nn::Sequential model(torch::nn::Flatten(), torch::nn::Linear(784, 32), torch::nn::ReLU(),
                              torch::nn::Linear(32, 10), torch::nn::LogSoftmax(1));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.5));

  auto dataset = torch::data::datasets::MNIST(root, torch::data::datasets::MNIST::Mode::kTest)
                     .map(torch::data::transforms::Normalize<>(0.2860, 0.3530))
                     .map(torch::data::transforms::Stack<>());
  const size_t dataset_size = dataset.size().value();
  auto loader =
      torch::data::make_data_loader(dataset, torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));
  auto eval_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(std::move(dataset), 1000);

  for (size_t epoch = 1; epoch <= 2; ++epoch) {
    model->train();
    size_t batch_idx = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::nll_loss(model->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      if (batch_idx++ % 25 == 0)
        std::printf("epoch %zu batch %zu/%zu loss %.5f\n", epoch, batch_idx,
                    (dataset_size + kBatchSize - 1) / kBatchSize, loss.item<float>());
    }
    torch::NoGradGuard no_grad;
    model->eval();
    int64_t correct = 0;
    for (const auto& batch : *eval_loader)
      correct += model->forward(batch.data).argmax(1).eq(batch.target).sum().item<int64_t>();
    std::printf("epoch %zu accuracy %.4f\n", epoch, double(correct) / double(dataset_size));
  }
}
