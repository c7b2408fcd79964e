// Options of the 1-D and transposed convolutions, 1-D and adaptive pooling, channel dropout and
// resampling (modules and nn::functional), with libtorch 1.13's names, defaults and chained setters.
#pragma once
#include <optional>
#include <ostream>
#include <vector>

#include "frontend/nn/options.h"

namespace kiln::nn {

// Prints "[3, 5]", as libtorch prints an ExpandingArray in a module's summary.
template <size_t D>
std::ostream& operator<<(std::ostream& os, const ExpandingArray<D>& a) {
  os << "[";
  for (size_t i = 0; i < D; ++i) os << (i ? ", " : "") << a[i];
  return os << "]";
}

using Conv1dOptions = ConvOptions<1>;

// Weight [in_channels, out_channels / groups, kernel...]; output_padding adds to one side of each
// output dimension (it picks among the sizes a strided convolution maps to the same input size).
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  KILN_ARG(int64_t, in_channels);
  KILN_ARG(int64_t, out_channels);
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride) = 1;
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, output_padding) = 0;
  KILN_ARG(int64_t, groups) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(PaddingMode, padding_mode) = kZeros;  // only kZeros, as in libtorch
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

using MaxPool1dOptions = MaxPoolOptions<1>;
using AvgPool1dOptions = AvgPoolOptions<1>;

// An output size per spatial dimension where a missing one (std::nullopt) keeps the input's
// size: `3`, `{3, 4}` or `{3, std::nullopt}` (libtorch's ExpandingArrayWithOptionalElem).
template <size_t D>
class ExpandingArrayWithOptionalElem {
 public:
  /* implicit */ ExpandingArrayWithOptionalElem(int64_t value) { values_.fill(value); }
  /* implicit */ ExpandingArrayWithOptionalElem(std::initializer_list<std::optional<int64_t>> values) {
    KILN_CHECK(values.size() == D, "expected ", D, " output sizes, got ", values.size());
    std::copy(values.begin(), values.end(), values_.begin());
  }
  /* implicit */ ExpandingArrayWithOptionalElem(ExpandingArray<D> values) {
    for (size_t i = 0; i < D; ++i) values_[i] = values[i];
  }
  const std::optional<int64_t>& operator[](size_t i) const { return values_[i]; }
  const std::array<std::optional<int64_t>, D>& operator*() const { return values_; }
  // The sizes for an input whose last D dimensions are `spatial`.
  std::vector<int64_t> resolve(IntArrayRef spatial) const {
    std::vector<int64_t> sizes(D);
    for (size_t i = 0; i < D; ++i) sizes[i] = values_[i].value_or(spatial[spatial.size() - D + i]);
    return sizes;
  }

 private:
  std::array<std::optional<int64_t>, D> values_;
};

template <typename OutputSize>
struct AdaptiveAvgPoolOptions {
  /* implicit */ AdaptiveAvgPoolOptions(OutputSize output_size) : output_size_(output_size) {}
  KILN_ARG(OutputSize, output_size);
};
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<ExpandingArray<1>>;
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<ExpandingArrayWithOptionalElem<2>>;

template <typename OutputSize>
struct AdaptiveMaxPoolOptions {
  /* implicit */ AdaptiveMaxPoolOptions(OutputSize output_size) : output_size_(output_size) {}
  KILN_ARG(OutputSize, output_size);
};
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<ExpandingArray<1>>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<ExpandingArrayWithOptionalElem<2>>;

using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;

// Exactly one of size and scale_factor; align_corners only with the linear modes (default false).
struct UpsampleOptions {
  KILN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  KILN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  KILN_ARG(InterpolateMode, mode) = kNearest;
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

namespace functional {

using Conv1dFuncOptions = ConvFuncOptions<1>;

template <size_t D>
struct ConvTransposeFuncOptions {
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(ExpandingArray<D>, stride) = 1;
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, output_padding) = 0;
  KILN_ARG(int64_t, groups) = 1;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;

using MaxPool1dFuncOptions = MaxPool1dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;

using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;

// recompute_scale_factor true: the kernels use the output size's ratio, not scale_factor.
struct InterpolateFuncOptions {
  KILN_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  KILN_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  KILN_ARG(InterpolateMode, mode) = kNearest;
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;
  KILN_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  KILN_ARG(bool, antialias) = false;
};

}  // namespace functional
}  // namespace kiln::nn
