// torch::data::Example: one sample (or one collated batch) as a data tensor and a target, and
// TensorExample, an example without a target.
#pragma once
#include <utility>

#include "frontend/tensor.h"

namespace kiln::data {

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

namespace example {
using NoTarget = void;
}  // namespace example

// An example with data only; it converts to and from its data, as libtorch's does.
template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  /* implicit */ Example(Data data) : data(std::move(data)) {}
  operator Data&() { return data; }
  operator const Data&() const { return data; }

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace kiln::data
