// torch::data::datasets::MNIST: the MNIST (or Fashion-MNIST, same layout) training or test split
// read from the four IDX files in `root`, raw or gzip-compressed:
// {train,t10k}-images-idx3-ubyte[.gz] and {train,t10k}-labels-idx1-ubyte[.gz].
// images() is float32 [N, 1, H, W] with pixels scaled to [0, 1], targets() int64 [N]; get(i) is
// {images()[i], targets()[i]}, data [1, H, W] and a scalar target, as libtorch's.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "frontend/data/datasets.h"

namespace kiln::data::datasets {

class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };

  // Throws kiln::Error naming the paths tried when a file is missing, and the file and its shape
  // when it is not an image or label file or the counts differ. Unlike libtorch's, the files may
  // be gzip-compressed and hold any number of images of any size (libtorch wants 28 x 28, and
  // exactly 60000 or 10000 of them).
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool train_;
};

}  // namespace kiln::data::datasets
