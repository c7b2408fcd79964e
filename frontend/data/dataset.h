// Fashion-MNIST (or any pair of IDX image and label files) as kiln tensors: images float32
// [N, 1, H, W] scaled to [0, 1], labels int64 [N].
#pragma once
#include <cstdint>
#include <string>

#include "frontend/data/idx.h"
#include "frontend/tensor.h"

namespace kiln::data {

struct Dataset {
  Tensor images;  // float32 [N, 1, H, W], values in [0, 1]
  Tensor labels;  // int64 [N], values in [0, num_classes)
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// The training split (60000 images) or the test split (10000) of Fashion-MNIST from `dir`
// (callers pass fashion_mnist_dir() by default), gzip-compressed or raw.
Dataset load_fashion_mnist(const std::string& dir, bool train);

// Images from an IDX file of rank 3, ubyte [N, H, W]; labels from one of rank 1, ubyte [N], each
// in [0, num_classes). Throws kiln::Error naming the file and the shapes when they do not fit.
Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path, int64_t num_classes = 10);

}  // namespace kiln::data
