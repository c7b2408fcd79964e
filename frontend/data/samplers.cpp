// The samplers' index lists. RandomSampler takes its permutations from kiln::randperm, which
// draws as libtorch's CPU randperm does (a Fisher-Yates pass on the default generator).
#include "frontend/data/samplers.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "frontend/ops.h"
#include "runtime/error.h"

namespace kiln::data::samplers {

void throw_no_archives(const char* what) {
  throw Error(
      detail::concat(what, ": kiln has no serialize::OutputArchive / InputArchive to save a sampler's state to"));
}

void check_distributed_replicas(size_t num_replicas, size_t rank) {
  KILN_CHECK(num_replicas > 0 && rank < num_replicas, "DistributedSampler: rank ", rank,
             " must be in [0, num_replicas) with num_replicas positive, got num_replicas ", num_replicas);
}

namespace {

// Indices [first, first + batch_size) of `all`, cut at `end`; nullopt once first reaches end.
template <typename Index>
std::optional<std::vector<size_t>> take(const std::vector<Index>& all, size_t& first, size_t end, size_t batch_size) {
  if (first >= end) return std::nullopt;
  const size_t last = std::min(end, first + batch_size);
  std::vector<size_t> batch(all.begin() + first, all.begin() + last);
  first = last;
  return batch;
}

}  // namespace

// --- RandomSampler ---

RandomSampler::RandomSampler(int64_t size, Dtype index_dtype) : index_dtype_(index_dtype) {
  KILN_CHECK(size >= 0, "RandomSampler: size must be non-negative, got ", size);
  indices_ = randperm(size, kLong).to_vector<int64_t>();  // the same draws for every index dtype
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  const size_t size = new_size.value_or(indices_.size());
  indices_ = randperm(int64_t(size), kLong).to_vector<int64_t>();
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return take(indices_, index_, indices_.size(), batch_size);
}

// --- SequentialSampler ---

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ >= size_) return std::nullopt;
  std::vector<size_t> batch(std::min(batch_size, size_ - index_));
  std::iota(batch.begin(), batch.end(), index_);
  index_ += batch.size();
  return batch;
}

// --- StreamSampler ---

void StreamSampler::reset(std::optional<size_t> new_size) {
  if (new_size) epoch_size_ = *new_size;
  examples_retrieved_so_far_ = 0;
}

std::optional<size_t> StreamSampler::next(size_t batch_size) {
  if (examples_retrieved_so_far_ >= epoch_size_) return std::nullopt;
  const size_t count = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
  examples_retrieved_so_far_ += count;
  return count;
}

// --- DistributedRandomSampler ---

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank, bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset(size_);
}

// All ranks list the same indices (0..size-1, then repeats from 0 up to equal shares) and shuffle
// them alike; each takes its own contiguous share.
void DistributedRandomSampler::populate_indices() {
  const size_t local = local_sample_count();
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  all_indices_.resize(count);
  std::iota(all_indices_.begin(), all_indices_.end(), size_t(0));
  for (size_t i = size_; i < count; ++i) all_indices_[i] = i - size_;
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
  std::mt19937 engine(static_cast<std::mt19937::result_type>(epoch_));
  std::shuffle(all_indices_.begin(), all_indices_.end(), engine);
  sample_index_ = begin_index_;
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return take(all_indices_, sample_index_, end_index_, batch_size);
}

// --- DistributedSequentialSampler ---

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
}

// The share's indices, wrapping past the end to the start (the repeats that pad the last share).
std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  if (sample_index_ >= end_index_) return std::nullopt;
  std::vector<size_t> batch(std::min(batch_size, end_index_ - sample_index_));
  std::iota(batch.begin(), batch.end(), sample_index_);
  for (size_t& index : batch) index %= size_;
  sample_index_ += batch.size();
  return batch;
}

}  // namespace kiln::data::samplers
