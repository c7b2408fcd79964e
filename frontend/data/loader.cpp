// DataLoader: the shuffle is a Fisher-Yates pass drawing from std::mt19937_64 with an unbiased
// bounded draw of our own (std::uniform_int_distribution and std::shuffle differ between
// standard libraries), so a seed gives the same order everywhere.
#include "frontend/data/loader.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "frontend/ops.h"
#include "runtime/error.h"

namespace kiln::data {

namespace {

// A uniform draw from [0, bound), rejecting the top remainder so that no value is favoured.
uint64_t uniform_below(std::mt19937_64& engine, uint64_t bound) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % bound;
  uint64_t x;
  do x = engine();
  while (x >= limit);
  return x % bound;
}

std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!shuffle) return order;
  std::mt19937_64 engine(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[size_t(i)], order[uniform_below(engine, uint64_t(i) + 1)]);
  return order;
}

// The checks before anything is built from the tensors.
int64_t checked_size(const Tensor& inputs, const Tensor& targets, int64_t batch_size) {
  KILN_CHECK(inputs.defined() && targets.defined(), "DataLoader: inputs and targets must be defined tensors");
  KILN_CHECK(batch_size > 0, "DataLoader: batch_size must be positive, got ", batch_size);
  KILN_CHECK(inputs.dim() >= 1 && targets.dim() >= 1, "DataLoader: inputs ", inputs.sizes().vec(), " and targets ",
             targets.sizes().vec(), " need a dim 0 to batch along");
  KILN_CHECK(inputs.size(0) == targets.size(0), "DataLoader: inputs ", inputs.sizes().vec(), " and targets ",
             targets.sizes().vec(), " differ in size along dim 0");
  return inputs.size(0);
}

}  // namespace

void DataLoader::EpochOrder::start_next() {
  ++epoch;
  if (shuffle) indices = epoch_order(size, true, seed + uint64_t(epoch));
}

DataLoader::Rows::Rows(Tensor inputs, Tensor targets, bool shuffle)
    : inputs(std::move(inputs)), targets(std::move(targets)), shuffle(shuffle) {}

Batch DataLoader::Rows::take(ArrayRef<size_t> indices) const {
  if (!shuffle) {  // in order: indices is a run
    const int64_t start = int64_t(indices.front()), length = int64_t(indices.size());
    return {inputs.narrow(0, start, length), targets.narrow(0, start, length)};
  }
  const Tensor index = tensor(std::vector<int64_t>(indices.begin(), indices.end()), kLong);
  return {index_select(inputs, 0, index), index_select(targets, 0, index)};
}

void DataLoader::EpochSampler::reset(std::optional<size_t>) {
  order->start_next();
  position = 0;
}

std::optional<std::vector<size_t>> DataLoader::EpochSampler::next(size_t batch_size) {
  const size_t size = order->indices.size();
  if (position >= size) return std::nullopt;
  const size_t end = std::min(size, position + batch_size);
  std::vector<size_t> batch(order->indices.begin() + int64_t(position), order->indices.begin() + int64_t(end));
  position = end;
  return batch;
}

DataLoader::DataLoader(Tensor inputs, Tensor targets, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       size_t workers)
    : batch_size_(batch_size),
      dataset_size_(checked_size(inputs, targets, batch_size)),
      drop_last_(drop_last),
      rows_(std::move(inputs), std::move(targets), shuffle) {
  // epoch 0's order, until start_epoch()
  order_ = std::make_shared<EpochOrder>(
      EpochOrder{dataset_size_, shuffle, seed, -1, epoch_order(dataset_size_, shuffle, seed)});
  loader_ = make_data_loader(rows_, EpochSampler(order_),
                             DataLoaderOptions(size_t(batch_size)).drop_last(drop_last).workers(workers));
}

int64_t DataLoader::num_batches() const {
  return drop_last_ ? dataset_size_ / batch_size_ : (dataset_size_ + batch_size_ - 1) / batch_size_;
}

Batch DataLoader::batch(int64_t i) const {
  KILN_CHECK(i >= 0 && i < num_batches(), "DataLoader: batch ", i, " is out of range: ", num_batches(), " batches of ",
             batch_size_, " from inputs ", rows_.inputs.sizes().vec());
  const int64_t start = i * batch_size_;
  const int64_t length = std::min(batch_size_, dataset_size_ - start);
  const std::vector<size_t> picked(order_->indices.begin() + start, order_->indices.begin() + start + length);
  return rows_.take(picked);
}

}  // namespace kiln::data
