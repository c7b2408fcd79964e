// torch::data::transforms: what `.map()` applies to a dataset's batches. A BatchTransform maps a
// whole batch; a Transform maps each example of a std::vector batch; a Collation turns the vector
// into one batch (Stack stacks the examples' tensors along a new dim 0); a TensorTransform maps an
// example's data tensor and keeps its target (Normalize, TensorLambda).
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/data/array_ref.h"
#include "frontend/data/example.h"
#include "frontend/ops.h"
#include "runtime/error.h"

namespace kiln::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;

  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;

  virtual OutputType apply(InputType input) = 0;

  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

// A batch transform from a function.
template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;

  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  OutputBatchType apply_batch(InputBatchType input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

// A per-example transform from a function.
template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;

  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

template <typename T, typename BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
template <typename T, typename BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

namespace detail {
// torch::stack of the examples' `what` tensors, after checking that they agree in shape, so the
// message names the examples and their shapes.
inline Tensor stack_examples(const std::vector<Tensor>& tensors, const char* what) {
  KILN_CHECK(!tensors.empty(), "Stack: cannot collate an empty batch of examples");
  for (size_t i = 1; i < tensors.size(); ++i)
    KILN_CHECK(tensors[i].sizes() == tensors[0].sizes(), "Stack: example ", i, " has ", what, " of shape ",
               tensors[i].sizes().vec(), " but example 0 has ", what, " of shape ", tensors[0].sizes().vec(),
               "; examples must agree in shape to stack");
  return kiln::stack(tensors);
}
}  // namespace detail

template <typename T = Example<>>
struct Stack;

// Examples {data [*], target [*]} to one example {data [B, *], target [B, *]}.
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {detail::stack_examples(data, "data"), detail::stack_examples(targets, "target")};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return detail::stack_examples(data, "data");
  }
};

// Maps an example's data tensor; the target passes through.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;

  virtual Tensor operator()(Tensor input) = 0;
  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;

  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (data - mean) / stddev with one mean and stddev for all channels or one per channel (dim 0 of a
// [C, H, W] example): mean and stddev are float32 [C, 1, 1], as libtorch's.
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(per_channel(mean, "mean")), stddev(per_channel(stddev, "stddev")) {}

  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;

 private:
  static Tensor per_channel(ArrayRef<double> values, const char* what) {
    KILN_CHECK(!values.empty(), "Normalize: ", what, " must hold one value or one per channel, got none");
    return kiln::tensor(values.vec(), kFloat).unsqueeze(1).unsqueeze(2);
  }
};

}  // namespace kiln::data::transforms
