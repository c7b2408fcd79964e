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

}  // namespace

DataLoader::DataLoader(Tensor inputs, Tensor targets, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), batch_size_(batch_size), dataset_size_(0),
      shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  KILN_CHECK(inputs_.defined() && targets_.defined(), "DataLoader: inputs and targets must be defined tensors");
  KILN_CHECK(batch_size_ > 0, "DataLoader: batch_size must be positive, got ", batch_size_);
  KILN_CHECK(inputs_.dim() >= 1 && targets_.dim() >= 1, "DataLoader: inputs ", inputs_.sizes().vec(), " and targets ",
             targets_.sizes().vec(), " need a dim 0 to batch along");
  KILN_CHECK(inputs_.size(0) == targets_.size(0), "DataLoader: inputs ", inputs_.sizes().vec(), " and targets ",
             targets_.sizes().vec(), " differ in size along dim 0");
  dataset_size_ = inputs_.size(0);
  order_ = epoch_order(dataset_size_, shuffle_, seed_);  // epoch 0's order, until start_epoch()
}

int64_t DataLoader::num_batches() const {
  return drop_last_ ? dataset_size_ / batch_size_ : (dataset_size_ + batch_size_ - 1) / batch_size_;
}

void DataLoader::start_epoch() {
  ++epoch_;
  if (shuffle_) order_ = epoch_order(dataset_size_, true, seed_ + uint64_t(epoch_));
}

Batch DataLoader::batch(int64_t i) const {
  KILN_CHECK(i >= 0 && i < num_batches(), "DataLoader: batch ", i, " is out of range: ", num_batches(),
             " batches of ", batch_size_, " from inputs ", inputs_.sizes().vec());
  const int64_t start = i * batch_size_;
  const int64_t length = std::min(batch_size_, dataset_size_ - start);
  if (!shuffle_) return {inputs_.narrow(0, start, length), targets_.narrow(0, start, length)};
  const std::vector<int64_t> picked(order_.begin() + start, order_.begin() + start + length);
  const Tensor index = tensor(picked, kLong);
  return {index_select(inputs_, 0, index), index_select(targets_, 0, index)};
}

DataLoader::Iterator DataLoader::begin() {
  start_epoch();
  return Iterator(this, 0);
}

Batch& DataLoader::Iterator::operator*() {
  if (!made_) {
    current_ = loader_->batch(index_);
    made_ = true;
  }
  return current_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++index_;
  made_ = false;
  current_ = Batch{};
  return *this;
}

}  // namespace kiln::data
