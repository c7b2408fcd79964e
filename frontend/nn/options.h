// Options of nn modules and nn::functional, with libtorch's names, defaults and chained setters
// (`LinearOptions(3, 2).bias(false)`, `CrossEntropyFuncOptions().reduction(torch::kSum)`).
#pragma once
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

struct SoftmaxOptions {
  /* implicit */ SoftmaxOptions(int64_t dim) : dim_(dim) {}
  KILN_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;

// --- losses ---

// Loss options also convert from a bare reduction tag: `nn::MSELoss(torch::kSum)`.
#define KILN_REDUCTION_CONSTRUCTORS(Options)             \
  Options() = default;                                   \
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

#undef KILN_REDUCTION_CONSTRUCTORS

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

using MSELossFuncOptions = MSELossOptions;
using L1LossFuncOptions = L1LossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;

}  // namespace functional
}  // namespace kiln::nn
