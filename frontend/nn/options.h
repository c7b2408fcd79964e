// Options of nn modules and nn::functional, with libtorch's names, defaults and chained setters
// (`LinearOptions(3, 2).bias(false)`, `CrossEntropyFuncOptions().reduction(torch::kSum)`).
#pragma once
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "frontend/nn/arg.h"
#include "frontend/nn/enum.h"
#include "frontend/tensor.h"

namespace kiln::nn {

// --- layers ---

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  KILN_ARG(int64_t, in_features);
  KILN_ARG(int64_t, out_features);
  KILN_ARG(bool, bias) = true;
};

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  KILN_ARG(std::vector<int64_t>, normalized_shape);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(bool, elementwise_affine) = true;
};

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KILN_ARG(int64_t, num_embeddings);
  KILN_ARG(int64_t, embedding_dim);
};

struct DropoutOptions {
  /* implicit */ DropoutOptions(double p = 0.5) : p_(p) {}
  KILN_ARG(double, p);
  KILN_ARG(bool, inplace) = false;
};

// A size per spatial dimension, given as one value or D of them: `3` or `{3, 5}` (libtorch's
// ExpandingArray).
template <size_t D>
class ExpandingArray {
 public:
  /* implicit */ ExpandingArray(int64_t value) { values_.fill(value); }
  /* implicit */ ExpandingArray(std::initializer_list<int64_t> values) : ExpandingArray(std::vector<int64_t>(values)) {}
  /* implicit */ ExpandingArray(const std::vector<int64_t>& values) {
    KILN_CHECK(values.size() == D, "expected ", D, " values, got ", values);
    std::copy(values.begin(), values.end(), values_.begin());
  }
  const std::array<int64_t, D>& operator*() const { return values_; }
  const std::array<int64_t, D>* operator->() const { return &values_; }
  int64_t operator[](size_t i) const { return values_[i]; }
  operator IntArrayRef() const { return IntArrayRef(values_.data(), D); }

 private:
  std::array<int64_t, D> values_;
};

template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  KILN_ARG(int64_t, in_channels);
  KILN_ARG(int64_t, out_channels);
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride) = 1;
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(int64_t, groups) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(PaddingMode, padding_mode) = kZeros;
};
using Conv2dOptions = ConvOptions<2>;

// stride defaults to the kernel size.
template <size_t D>
struct MaxPoolOptions {
  /* implicit */ MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(bool, ceil_mode) = false;
};
using MaxPool2dOptions = MaxPoolOptions<2>;

template <size_t D>
struct AvgPoolOptions {
  /* implicit */ AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  KILN_ARG(ExpandingArray<D>, kernel_size);
  KILN_ARG(ExpandingArray<D>, stride);
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(bool, ceil_mode) = false;
  KILN_ARG(bool, count_include_pad) = true;
  KILN_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool2dOptions = AvgPoolOptions<2>;

// momentum nullopt: running statistics are the cumulative average over all batches seen.
struct BatchNormOptions {
  /* implicit */ BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  KILN_ARG(int64_t, num_features);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(std::optional<double>, momentum) = 0.1;
  KILN_ARG(bool, affine) = true;
  KILN_ARG(bool, track_running_stats) = true;
};

struct FlattenOptions {
  KILN_ARG(int64_t, start_dim) = 1;
  KILN_ARG(int64_t, end_dim) = -1;
};

// --- activations ---

struct ReLUOptions {
  /* implicit */ ReLUOptions(bool inplace = false) : inplace_(inplace) {}
  KILN_ARG(bool, inplace);
};

struct LeakyReLUOptions {
  KILN_ARG(double, negative_slope) = 1e-2;
  KILN_ARG(bool, inplace) = false;
};

// approximate is "none" (the exact erf form) or "tanh".
struct GELUOptions {
  KILN_ARG(std::string, approximate) = "none";
};

struct SoftplusOptions {
  KILN_ARG(double, beta) = 1.0;
  KILN_ARG(double, threshold) = 20.0;
};

struct SoftmaxOptions {
  /* implicit */ SoftmaxOptions(int64_t dim) : dim_(dim) {}
  KILN_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;

// --- losses ---

// Loss options also convert from a bare reduction tag: `nn::MSELoss(torch::kSum)` (functional_more.h
// uses it too).
#define KILN_REDUCTION_CONSTRUCTORS(Options)               \
  Options() = default;                                     \
  Options(enumtype::kNone r) : reduction_(Reduction(r)) {} \
  Options(enumtype::kMean r) : reduction_(Reduction(r)) {} \
  Options(enumtype::kSum r) : reduction_(Reduction(r)) {}

struct MSELossOptions {
  KILN_REDUCTION_CONSTRUCTORS(MSELossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
};

struct L1LossOptions {
  KILN_REDUCTION_CONSTRUCTORS(L1LossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
};

struct SmoothL1LossOptions {
  KILN_REDUCTION_CONSTRUCTORS(SmoothL1LossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
  KILN_ARG(double, beta) = 1.0;
};

struct NLLLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(NLLLossOptions)
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = kMean;
};

struct CrossEntropyLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(CrossEntropyLossOptions)
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = kMean;
  KILN_ARG(double, label_smoothing) = 0.0;
};

struct BCELossOptions {
  KILN_REDUCTION_CONSTRUCTORS(BCELossOptions)
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Reduction, reduction) = kMean;
};

struct BCEWithLogitsLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(BCEWithLogitsLossOptions)
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Reduction, reduction) = kMean;
  KILN_ARG(Tensor, pos_weight) = {};
};

struct HuberLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(HuberLossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
  KILN_ARG(double, delta) = 1.0;
};

// --- the option types of nn::functional ---

namespace functional {

using ReLUFuncOptions = ReLUOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using GELUFuncOptions = GELUOptions;

struct SoftmaxFuncOptions {
  /* implicit */ SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  KILN_ARG(int64_t, dim);
  KILN_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

struct DropoutFuncOptions {
  KILN_ARG(double, p) = 0.5;
  KILN_ARG(bool, training) = true;
  KILN_ARG(bool, inplace) = false;
};

struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  KILN_ARG(std::vector<int64_t>, normalized_shape);
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(double, eps) = 1e-5;
};

template <size_t D>
struct ConvFuncOptions {
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(ExpandingArray<D>, stride) = 1;
  KILN_ARG(ExpandingArray<D>, padding) = 0;
  KILN_ARG(ExpandingArray<D>, dilation) = 1;
  KILN_ARG(int64_t, groups) = 1;
};
using Conv2dFuncOptions = ConvFuncOptions<2>;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;

// Constant padding only: {left, right[, top, bottom]}.
struct PadFuncOptions {
  /* implicit */ PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  KILN_ARG(std::vector<int64_t>, pad);
  KILN_ARG(PadMode, mode) = kConstant;
  KILN_ARG(double, value) = 0;
};

struct BatchNormFuncOptions {
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(bool, training) = false;
  KILN_ARG(std::optional<double>, momentum) = 0.1;
  KILN_ARG(double, eps) = 1e-5;
};

using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using SoftplusFuncOptions = SoftplusOptions;

}  // namespace functional
}  // namespace kiln::nn

namespace kiln {
using nn::ExpandingArray;  // torch::ExpandingArray
}  // namespace kiln
