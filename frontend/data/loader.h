// DataLoader: batches of (inputs, targets) taken along dim 0 of two whole-dataset tensors, in
// order or shuffled with its own seeded generator, the last partial batch kept unless drop_last.
// kiln's own loader for `kiln train`; it iterates through a StatelessDataLoader (dataloader.h),
// so `workers` threads can make batches ahead as there.
//
//   DataLoader loader(ds.images, ds.labels, 64, /*shuffle=*/true, /*seed=*/0);
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) train_step(batch.data, batch.target);  // each loop is a new epoch
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "frontend/data/dataloader.h"
#include "frontend/data/example.h"
#include "frontend/tensor.h"

namespace kiln::data {

using Batch = Example<>;

class DataLoader {
 public:
  DataLoader(Tensor inputs, Tensor targets, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last = false,
             size_t workers = 0);

  int64_t num_batches() const;
  int64_t batch_size() const { return batch_size_; }
  int64_t dataset_size() const { return dataset_size_; }
  // The epoch whose order batch() follows: -1 before the first start_epoch(), which uses epoch 0's order.
  int64_t epoch() const { return order_->epoch; }

  // Starts the next epoch e (0, 1, ...): with shuffle, a new order drawn from a std::mt19937_64
  // seeded with seed + e, so a run is reproducible and each epoch differs.
  void start_epoch() { order_->start_next(); }
  // Batch i of the current epoch: narrow() slices in order, index_select of the shuffled indices
  // otherwise. Throws kiln::Error for i outside [0, num_batches()).
  Batch batch(int64_t i) const;
  // The sample indices of the current epoch, in the order batches take them.
  const std::vector<int64_t>& order() const { return order_->indices; }

  // A range-for is one epoch: begin() calls start_epoch(), as a libtorch data loader reshuffles
  // on each pass. (For index loops with batch(i), call start_epoch() yourself.)
  using Iterator = data::Iterator<Batch>;
  Iterator begin() { return loader_->begin(); }
  Iterator end() { return loader_->end(); }

  // The epoch's order, shared by the loader and its sampler.
  struct EpochOrder {
    int64_t size;
    bool shuffle;
    uint64_t seed;
    int64_t epoch = -1;
    std::vector<int64_t> indices;
    void start_next();
  };

  // The rows an index list names: a narrow() of a run in order, an index_select when shuffled.
  struct Rows : datasets::BatchDataset<Rows, Batch> {
    Tensor inputs, targets;
    bool shuffle = false;
    Rows(Tensor inputs, Tensor targets, bool shuffle);
    Batch get_batch(ArrayRef<size_t> indices) override { return take(indices); }
    Batch take(ArrayRef<size_t> indices) const;
    std::optional<size_t> size() const override { return size_t(inputs.size(0)); }
  };

  // Hands out the epoch's order in batches; reset() starts the next epoch.
  struct EpochSampler : samplers::Sampler<> {
    std::shared_ptr<EpochOrder> order;
    size_t position = 0;
    explicit EpochSampler(std::shared_ptr<EpochOrder> order) : order(std::move(order)) {}
    void reset(std::optional<size_t> new_size = std::nullopt) override;
    std::optional<std::vector<size_t>> next(size_t batch_size) override;
  };

 private:
  int64_t batch_size_, dataset_size_;
  bool drop_last_;
  Rows rows_;  // for batch(i); the loader holds a copy (its workers, one each)
  std::shared_ptr<EpochOrder> order_;
  std::unique_ptr<StatelessDataLoader<Rows, EpochSampler>> loader_;
};

}  // namespace kiln::data
