// DataLoader: batches of (inputs, targets) taken along dim 0 of two whole-dataset tensors, in
// order or shuffled with its own seeded generator, the last partial batch kept unless drop_last.
//
//   DataLoader loader(ds.images, ds.labels, 64, /*shuffle=*/true, /*seed=*/0);
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) train_step(batch.data, batch.target);  // each loop is a new epoch
#pragma once
#include <cstdint>
#include <iterator>
#include <vector>

#include "frontend/tensor.h"

namespace kiln::data {

struct Batch {
  Tensor data;
  Tensor target;
};

class DataLoader {
 public:
  DataLoader(Tensor inputs, Tensor targets, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last = false);

  int64_t num_batches() const;
  int64_t batch_size() const { return batch_size_; }
  int64_t dataset_size() const { return dataset_size_; }
  // The epoch whose order batch() follows: -1 before the first start_epoch(), which uses epoch 0's order.
  int64_t epoch() const { return epoch_; }

  // Starts the next epoch e (0, 1, ...): with shuffle, a new order drawn from a std::mt19937_64
  // seeded with seed + e, so a run is reproducible and each epoch differs.
  void start_epoch();
  // Batch i of the current epoch: narrow() slices in order, index_select of the shuffled indices
  // otherwise. Throws kiln::Error for i outside [0, num_batches()).
  Batch batch(int64_t i) const;
  // The sample indices of the current epoch, in the order batches take them.
  const std::vector<int64_t>& order() const { return order_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = Batch*;
    using reference = Batch&;

    Iterator(const DataLoader* loader, int64_t index) : loader_(loader), index_(index) {}
    Batch& operator*();  // made on first access, so `for (auto& batch : loader)` works
    Batch* operator->() { return &**this; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return loader_ == o.loader_ && index_ == o.index_; }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    const DataLoader* loader_;
    int64_t index_;
    Batch current_;
    bool made_ = false;
  };

  // A range-for is one epoch: begin() calls start_epoch(), as a libtorch data loader reshuffles
  // on each pass. (For index loops with batch(i), call start_epoch() yourself.)
  Iterator begin();
  Iterator end() const { return Iterator(this, num_batches()); }

 private:
  Tensor inputs_, targets_;
  int64_t batch_size_, dataset_size_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace kiln::data
