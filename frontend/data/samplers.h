// torch::data::samplers: which indices each batch takes. A data loader calls reset() at each
// epoch's start and next(batch_size) until it returns nullopt.
//
// RandomSampler draws torch::randperm(size) from the default generator when it is made and again
// at every reset(), as libtorch's, so after torch::manual_seed(s) a loader visits the examples in
// libtorch's order. The distributed samplers give each of num_replicas ranks its share of the
// indices (padded with repeats to equal shares when allow_duplicates), shuffled per epoch with a
// std::mt19937 seeded with the epoch (set_epoch) where random.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "frontend/data/datasets.h"
#include "runtime/dtype.h"

namespace kiln::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;

  virtual ~Sampler() = default;
  virtual void reset(std::optional<size_t> new_size) = 0;
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
  // kiln has no serialize::OutputArchive (see datasets.h): these throw kiln::Error unless a
  // sampler overrides them.
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);
};

[[noreturn]] void throw_no_archives(const char* what);
// Throws kiln::Error unless 0 <= rank < num_replicas.
void check_distributed_replicas(size_t num_replicas, size_t rank);

template <typename BatchRequest>
void Sampler<BatchRequest>::save(serialize::OutputArchive&) const {
  throw_no_archives("Sampler::save");
}
template <typename BatchRequest>
void Sampler<BatchRequest>::load(serialize::InputArchive&) {
  throw_no_archives("Sampler::load");
}

class RandomSampler : public Sampler<> {
 public:
  // The permutation is the same whatever index_dtype (libtorch's randperm draws alike for each).
  explicit RandomSampler(int64_t size, Dtype index_dtype = kInt64);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<int64_t> indices_;
  Dtype index_dtype_;
  size_t index_ = 0;
};

class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

// For stream datasets: asks for batch_size examples at a time, `epoch_size` in all.
class StreamSampler : public Sampler<size_t> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<size_t> next(size_t batch_size) override;

 private:
  size_t examples_retrieved_so_far_ = 0;
  size_t epoch_size_;
};

template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), epoch_(0), allow_duplicates_(allow_duplicates) {
    check_distributed_replicas(num_replicas, rank);
  }
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }

 protected:
  // Each rank's share: rounded up (and padded with repeats) when duplicates are allowed.
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_;
  bool allow_duplicates_;
};

class DistributedRandomSampler : public DistributedSampler<> {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_ - begin_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
  std::vector<size_t> all_indices_;
};

class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return sample_index_ - begin_index_; }

 private:
  void populate_indices();
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
};

}  // namespace kiln::data::samplers
