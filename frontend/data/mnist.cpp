// MNIST: the four IDX files found as find_idx_file finds Fashion-MNIST's (.gz first, then raw)
// and turned into tensors by load_idx_pair.
#include <string>

#include "frontend/data/dataset.h"
#include "frontend/data/datasets.h"
#include "runtime/error.h"

namespace kiln::data::datasets {

namespace {

kiln::data::Dataset read_split(const std::string& root, bool train) {
  const std::string split = train ? "train" : "t10k";
  const char* mode = train ? "kTrain" : "kTest";
  std::string images, labels;
  try {
    images = find_idx_file(root, split + "-images-idx3-ubyte");
    labels = find_idx_file(root, split + "-labels-idx1-ubyte");
  } catch (const Error& e) {
    throw Error(kiln::detail::concat("MNIST(\"", root, "\", ", mode, "): missing file: ", e.what()));
  }
  // Labels are bytes: any value is a class, as libtorch's reader takes them.
  return load_idx_pair(images, labels, /*num_classes=*/256);
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  kiln::data::Dataset split = read_split(root, train_);
  images_ = std::move(split.images);
  targets_ = std::move(split.labels);
}

Example<> MNIST::get(size_t index) {
  KILN_CHECK(index < size_t(images_.size(0)), "MNIST::get: index ", index, " is out of range for ", images_.size(0),
             " examples (images ", images_.sizes().vec(), ")");
  return {images_[int64_t(index)], targets_[int64_t(index)]};
}

std::optional<size_t> MNIST::size() const { return size_t(images_.size(0)); }

}  // namespace kiln::data::datasets
