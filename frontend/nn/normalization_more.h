// Group, instance and local response normalization, as nn::functional and as modules, with
// libtorch's options; and BatchNorm3d. Composites of kiln's ops (normalization_more.cpp).
#pragma once
#include <optional>

#include "frontend/nn/module.h"
#include "frontend/nn/modules.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  KILN_ARG(int64_t, num_groups);
  KILN_ARG(int64_t, num_channels);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(bool, affine) = true;
};

// As BatchNormOptions, with libtorch's defaults for instance norm (no affine, no running stats).
struct InstanceNormOptions {
  /* implicit */ InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  KILN_ARG(int64_t, num_features);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(double, momentum) = 0.1;
  KILN_ARG(bool, affine) = false;
  KILN_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

struct LocalResponseNormOptions {
  /* implicit */ LocalResponseNormOptions(int64_t size) : size_(size) {}
  KILN_ARG(int64_t, size);
  KILN_ARG(double, alpha) = 1e-4;
  KILN_ARG(double, beta) = 0.75;
  KILN_ARG(double, k) = 1.0;
};

namespace functional {

struct GroupNormFuncOptions {
  /* implicit */ GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  KILN_ARG(int64_t, num_groups);
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(double, eps) = 1e-5;
};

struct InstanceNormFuncOptions {
  KILN_ARG(Tensor, running_mean) = {};
  KILN_ARG(Tensor, running_var) = {};
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Tensor, bias) = {};
  KILN_ARG(bool, use_input_stats) = true;
  KILN_ARG(double, momentum) = 0.1;
  KILN_ARG(double, eps) = 1e-5;
};
using LocalResponseNormFuncOptions = LocalResponseNormOptions;

// input [N, C, *] normalized over each group of C / num_groups channels and *, then scaled and
// shifted per channel by weight and bias [C] when given.
Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
// input [N, C, *] normalized over * per sample and channel. With use_input_stats and running
// statistics [C], these are updated in place with momentum (the batch's mean over samples), as
// libtorch; without use_input_stats the running statistics normalize.
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options = {});
// x / (k + alpha / size * sum of x^2 over the `size` neighbouring channels)^beta, input [N, C, *].
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options);

}  // namespace functional

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  GroupNormOptions options;
  Tensor weight, bias;
};
KILN_MODULE(GroupNorm);

// InstanceNorm1d takes [N, C, L] or [C, L], 2d [N, C, H, W] or [C, H, W], 3d [N, C, D, H, W] or
// [C, D, H, W]. With track_running_stats, evaluation normalizes with the running statistics.
class InstanceNormImplBase : public Module {
 public:
  InstanceNormImplBase(const InstanceNormOptions& options, const char* name, int64_t spatial_dims);
  void reset();
  void reset_parameters();
  void reset_running_stats();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  InstanceNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  const char* name_;
  int64_t spatial_dims_;
};

#define KILN_INSTANCE_NORM(Name, spatial_dims)                                                                      \
  class Name##Impl : public InstanceNormImplBase {                                                                  \
   public:                                                                                                          \
    explicit Name##Impl(const InstanceNormOptions& options) : InstanceNormImplBase(options, #Name, spatial_dims) {} \
    explicit Name##Impl(int64_t num_features) : Name##Impl(InstanceNormOptions(num_features)) {}                    \
  };                                                                                                                \
  KILN_MODULE(Name)
KILN_INSTANCE_NORM(InstanceNorm1d, 1);
KILN_INSTANCE_NORM(InstanceNorm2d, 2);
KILN_INSTANCE_NORM(InstanceNorm3d, 3);
#undef KILN_INSTANCE_NORM

class BatchNorm3dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm3dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm3d", 5, 5) {}
  explicit BatchNorm3dImpl(int64_t num_features) : BatchNorm3dImpl(BatchNormOptions(num_features)) {}
};
KILN_MODULE(BatchNorm3d);

class LocalResponseNormImpl : public Module {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::local_response_norm(input, options); }
  void pretty_print(std::ostream& stream) const override;
  LocalResponseNormOptions options;
};
KILN_MODULE(LocalResponseNorm);

}  // namespace kiln::nn
