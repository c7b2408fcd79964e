// torch::data::datasets: the dataset interfaces of libtorch's data API.
//
//   struct Squares : torch::data::datasets::Dataset<Squares> {        // CRTP, as in libtorch
//     torch::data::Example<> get(size_t i) override { return {torch::full({1}, double(i * i)),
//     torch::tensor(int64_t(i))}; } torch::optional<size_t> size() const override { return 100; }
//   };
//   auto ds = Squares().map(torch::data::transforms::Stack<>());      // a MapDataset
//
// A BatchDataset answers a batch request (by default a list of indices) with a batch; a Dataset
// answers one index with one example and batches by calling get() per index; a StatefulDataset
// answers a batch size with an optional batch, empty when the epoch is over, and is reset() per epoch.
#pragma once
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "frontend/data/array_ref.h"
#include "frontend/data/example.h"
#include "frontend/ops.h"

namespace kiln::serialize {
// libtorch's archives; kiln saves modules as safetensors (frontend/nn/serialize.h) and has no
// archive classes, so samplers and stateful datasets only name them in their signatures.
class OutputArchive;
class InputArchive;
}  // namespace kiln::serialize

namespace kiln::data::datasets {

template <typename Source, typename Transform>
class MapDataset;
template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform);

namespace detail {
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
}  // namespace detail

template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  // A dataset whose batches are optional ends an epoch itself, by returning nullopt.
  constexpr static bool is_stateful = detail::is_optional<BatchType>::value;

  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples, or nullopt where unknown (a stream).
  virtual std::optional<size_t> size() const = 0;

  // This dataset with `transform` applied to each batch it gives.
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A dataset asked for a number of examples rather than for indices.
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, /*BatchRequest=*/size_t>;

template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = size_t>
class StatefulDataset : public BatchDataset<Self, std::optional<Batch>, BatchRequest> {
 public:
  virtual void reset() = 0;
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

// A source dataset whose batches pass through a transform. A stateful source stays stateful: an
// empty batch passes through empty.
template <typename SourceDataset, typename AppliedTransform>
class MapDataset
    : public BatchDataset<
          MapDataset<SourceDataset, AppliedTransform>,
          std::conditional_t<SourceDataset::is_stateful, std::optional<typename AppliedTransform::OutputBatchType>,
                             typename AppliedTransform::OutputBatchType>,
          typename SourceDataset::BatchRequestType> {
 public:
  using DatasetType = SourceDataset;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename SourceDataset::BatchRequestType;
  using OutputBatchType =
      std::conditional_t<SourceDataset::is_stateful, std::optional<typename AppliedTransform::OutputBatchType>,
                         typename AppliedTransform::OutputBatchType>;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType request) override {
    if constexpr (SourceDataset::is_stateful) {
      auto batch = dataset_.get_batch(std::move(request));
      if (!batch) return std::nullopt;
      return transform_.apply_batch(std::move(*batch));
    } else {
      return transform_.apply_batch(dataset_.get_batch(std::move(request)));
    }
  }
  std::optional<size_t> size() const noexcept override { return dataset_.size(); }
  // Resets a stateful source (the loader calls this at each epoch's start).
  void reset() { dataset_.reset(); }

  const SourceDataset& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  SourceDataset dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  using SourceBatch = std::conditional_t<DatasetType::is_stateful, typename DatasetType::BatchType::value_type,
                                         typename DatasetType::BatchType>;
  static_assert(std::is_same<SourceBatch, typename TransformType::InputBatchType>::value,
                "BatchType type of dataset does not match input type of transform");
  return {std::move(dataset), std::move(transform)};
}

// Examples along dim 0 of one tensor (or of a list of tensors, stacked).
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  explicit TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(kiln::stack(tensors)) {}
  explicit TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {}

  TensorExample get(size_t index) override { return tensor[int64_t(index)]; }
  std::optional<size_t> size() const override { return size_t(tensor.size(0)); }

  Tensor tensor;
};

}  // namespace kiln::data::datasets

#include "frontend/data/mnist.h"
