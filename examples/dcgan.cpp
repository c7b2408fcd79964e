// libtorch's DCGAN example (pytorch/examples, cpp/dcgan) as a user writes it: a generator of
// transposed convolutions and batch norms against a convolutional discriminator, trained with
// BCELoss and Adam on MNIST-format images through torch::data, with checkpoints of both models,
// both optimizers and generated samples, and a run that restores from them. Built with kiln it
// includes <kiln/torch.h>; built with -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 it printed
// tests/reference/dcgan.txt.
//
//   dcgan [DATA_DIR [EPOCHS [BATCHES_PER_EPOCH [CHECKPOINT_EVERY [CHECKPOINT_DIR [RESTORE [LOG_EVERY]]]]]]]
//
// BATCHES_PER_EPOCH 0 trains on every batch; RESTORE 1 starts from the checkpoint in
// CHECKPOINT_DIR; the losses are printed every LOG_EVERY batches (10). Seconds per epoch go to
// stderr.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

using namespace torch;

// The size of the noise vector fed to the generator.
const int64_t kNoiseSize = 100;
// The batch size for training.
const int64_t kBatchSize = 64;
// How many images to sample at every checkpoint.
const int64_t kNumberOfSamplesPerCheckpoint = 10;

struct DCGANGeneratorImpl : nn::Module {
  DCGANGeneratorImpl(int kNoiseSize)
      : conv1(nn::ConvTranspose2dOptions(kNoiseSize, 256, 4).bias(false)),
        batch_norm1(256),
        conv2(nn::ConvTranspose2dOptions(256, 128, 3).stride(2).padding(1).bias(false)),
        batch_norm2(128),
        conv3(nn::ConvTranspose2dOptions(128, 64, 4).stride(2).padding(1).bias(false)),
        batch_norm3(64),
        conv4(nn::ConvTranspose2dOptions(64, 1, 4).stride(2).padding(1).bias(false)) {
    // register_module() is needed if we want to use the parameters() method later on
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));
    x = torch::relu(batch_norm2(conv2(x)));
    x = torch::relu(batch_norm3(conv3(x)));
    x = torch::tanh(conv4(x));
    return x;
  }

  nn::ConvTranspose2d conv1;
  nn::BatchNorm2d batch_norm1;
  nn::ConvTranspose2d conv2;
  nn::BatchNorm2d batch_norm2;
  nn::ConvTranspose2d conv3;
  nn::BatchNorm2d batch_norm3;
  nn::ConvTranspose2d conv4;
};

TORCH_MODULE(DCGANGenerator);

int main(int argc, const char* argv[]) {
  const std::string data_folder = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int64_t epochs = argc > 2 ? std::stol(argv[2]) : 30;
  const int64_t batches_limit = argc > 3 ? std::stol(argv[3]) : 0;
  const int64_t checkpoint_every = argc > 4 ? std::stol(argv[4]) : 200;
  const std::string checkpoint_dir = argc > 5 ? argv[5] : ".";
  const bool restore_from_checkpoint = argc > 6 && std::string(argv[6]) == "1";
  // After how many batches to log a new update with the loss value.
  const int64_t kLogInterval = argc > 7 ? std::stol(argv[7]) : 10;
  torch::manual_seed(1);

  DCGANGenerator generator(kNoiseSize);

  nn::Sequential discriminator(
      // Layer 1
      nn::Conv2d(nn::Conv2dOptions(1, 64, 4).stride(2).padding(1).bias(false)),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 2
      nn::Conv2d(nn::Conv2dOptions(64, 128, 4).stride(2).padding(1).bias(false)), nn::BatchNorm2d(128),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 3
      nn::Conv2d(nn::Conv2dOptions(128, 256, 4).stride(2).padding(1).bias(false)), nn::BatchNorm2d(256),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // Layer 4
      nn::Conv2d(nn::Conv2dOptions(256, 1, 3).stride(1).padding(0).bias(false)), nn::Sigmoid());

  // Assume the MNIST dataset is available under `data_folder`;
  auto dataset = torch::data::datasets::MNIST(data_folder)
                     .map(torch::data::transforms::Normalize<>(0.5, 0.5))
                     .map(torch::data::transforms::Stack<>());
  const int64_t batches_per_epoch = std::ceil(dataset.size().value() / static_cast<double>(kBatchSize));

  auto data_loader = torch::data::make_data_loader(std::move(dataset),
                                                   torch::data::DataLoaderOptions().batch_size(kBatchSize).workers(2));

  torch::optim::Adam generator_optimizer(generator->parameters(),
                                         torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(discriminator->parameters(),
                                             torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));

  const std::string in = checkpoint_dir + "/";
  if (restore_from_checkpoint) {
    torch::load(generator, in + "generator-checkpoint.pt");
    torch::load(generator_optimizer, in + "generator-optimizer-checkpoint.pt");
    torch::load(discriminator, in + "discriminator-checkpoint.pt");
    torch::load(discriminator_optimizer, in + "discriminator-optimizer-checkpoint.pt");
    std::printf("Restored the generator, the discriminator and their optimizers\n");
  }

  int64_t checkpoint_counter = 1;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    int64_t batch_index = 0;
    for (torch::data::Example<>& batch : *data_loader) {
      if (batches_limit > 0 && batch_index >= batches_limit) continue;  // the loader runs to its end
      // Train discriminator with real images.
      discriminator->zero_grad();
      torch::Tensor real_images = batch.data;
      torch::Tensor real_labels = torch::empty(batch.data.size(0)).uniform_(0.8, 1.0);
      torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
      torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      // Train discriminator with fake images.
      torch::Tensor noise = torch::randn({batch.data.size(0), kNoiseSize, 1, 1});
      torch::Tensor fake_images = generator->forward(noise);
      torch::Tensor fake_labels = torch::zeros(batch.data.size(0));
      torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
      torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();

      torch::Tensor d_loss = d_loss_real + d_loss_fake;
      discriminator_optimizer.step();

      // Train generator.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
      torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();
      batch_index++;
      if (batch_index % kLogInterval == 0) {
        std::printf("[%2ld/%2ld][%3ld/%3ld] D_loss: %.4f | G_loss: %.4f\n", long(epoch), long(epochs),
                    long(batch_index), long(batches_per_epoch), d_loss.item<float>(), g_loss.item<float>());
      }

      if (batch_index % checkpoint_every == 0) {
        // Checkpoint the model and optimizer state.
        torch::save(generator, in + "generator-checkpoint.pt");
        torch::save(generator_optimizer, in + "generator-optimizer-checkpoint.pt");
        torch::save(discriminator, in + "discriminator-checkpoint.pt");
        torch::save(discriminator_optimizer, in + "discriminator-optimizer-checkpoint.pt");
        // Sample the generator and save the images.
        torch::Tensor samples = generator->forward(torch::randn({kNumberOfSamplesPerCheckpoint, kNoiseSize, 1, 1}));
        torch::save((samples + 1.0) / 2.0, in + "dcgan-sample-" + std::to_string(checkpoint_counter) + ".pt");
        std::cout << "-> checkpoint " << ++checkpoint_counter << '\n';
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "epoch " << epoch << ": " << seconds << " s\n";
  }

  std::cout << "Training complete!" << std::endl;
}
