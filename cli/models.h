// The models `kiln train` trains on Fashion-MNIST, written with libtorch's names so that the same
// header builds against libtorch 1.13 for the side-by-side comparison (perf/train_fashion.cpp,
// with -DKILN_BENCH_LIBTORCH). Both take images [N, 1, 28, 28] and return logits [N, 10].
#pragma once
#ifdef KILN_BENCH_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

namespace fashion {

namespace nn = torch::nn;

// 784-512-256-10 with ReLU.
inline nn::Sequential make_mlp() {
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                        nn::Linear(256, 10));
}

// Two 3x3 convolutions (32 and 64 channels) with batch norm, ReLU and 2x2 max pooling, then a
// 128-unit hidden layer.
inline nn::Sequential make_cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::BatchNorm2d(32), nn::ReLU(),
                        nn::MaxPool2d(2),  // 14x14
                        nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::BatchNorm2d(64), nn::ReLU(),
                        nn::MaxPool2d(2),  // 7x7
                        nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
}

// Fashion-MNIST's pixel mean and standard deviation (of the training set, scaled to [0, 1]).
constexpr double kPixelMean = 0.2860, kPixelStd = 0.3530;

}  // namespace fashion
