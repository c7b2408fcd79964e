// Conv1d, ConvTranspose1d/2d, the 1-D and adaptive pools, channel dropout and Upsample as
// modules, each a ModuleHolder over its `...Impl` as in libtorch 1.13; the computation is in
// frontend/conv_transpose.cpp, pooling.cpp and upsample.cpp.
#pragma once
#include <optional>
#include <tuple>

#include "frontend/nn/conv_functional.h"
#include "frontend/nn/module.h"

namespace kiln::nn {

// 1-D convolution over [N, C, L] (or [C, L]); weight [out, in / groups, k]. Initialized as
// libtorch: kaiming_uniform(a = sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv1dImpl : public Module {
 public:
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : Conv1dImpl(Conv1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  Conv1dOptions options;
  Tensor weight, bias;
};
KILN_MODULE(Conv1d);

// Transposed convolution (the adjoint of a convolution: each input position adds its weighted
// kernel into the output); weight [in, out / groups, kernel...], initialized as Conv's from the
// weight's fan_in (out / groups * kernel). forward's output_size, when given (D sizes, or D + 2
// with batch and channels), picks the output_padding that produces it.
template <size_t D, typename Derived>
class ConvTransposeNdImpl : public Module {
 public:
  explicit ConvTransposeNdImpl(const ConvTransposeOptions<D>& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
  void pretty_print(std::ostream& stream) const override;

  ConvTransposeOptions<D> options;
  Tensor weight, bias;
};

class ConvTranspose1dImpl : public ConvTransposeNdImpl<1, ConvTranspose1dImpl> {
 public:
  ConvTranspose1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options) : ConvTransposeNdImpl(options) {}
};
KILN_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public ConvTransposeNdImpl<2, ConvTranspose2dImpl> {
 public:
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options) : ConvTransposeNdImpl(options) {}
};
KILN_MODULE(ConvTranspose2d);

class MaxPool1dImpl : public Module {
 public:
  MaxPool1dImpl(ExpandingArray<1> kernel_size) : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}
  explicit MaxPool1dImpl(const MaxPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::max_pool1d(input, options); }
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input) {
    return functional::max_pool1d_with_indices(input, options);
  }
  void pretty_print(std::ostream& stream) const override;
  MaxPool1dOptions options;
};
KILN_MODULE(MaxPool1d);

class AvgPool1dImpl : public Module {
 public:
  AvgPool1dImpl(ExpandingArray<1> kernel_size) : AvgPool1dImpl(AvgPool1dOptions(kernel_size)) {}
  explicit AvgPool1dImpl(const AvgPool1dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::avg_pool1d(input, options); }
  void pretty_print(std::ostream& stream) const override;
  AvgPool1dOptions options;
};
KILN_MODULE(AvgPool1d);

// Adaptive pools: forward(input) pools to options.output_size whatever the input's size.
#define KILN_ADAPTIVE_POOL(Name, fn, OutputSize)                                   \
  class Name##Impl : public Module {                                               \
   public:                                                                         \
    Name##Impl(OutputSize output_size) : options(output_size) {}                   \
    explicit Name##Impl(const Name##Options& options) : options(options) {}        \
    Tensor forward(const Tensor& input) { return functional::fn(input, options); } \
    void pretty_print(std::ostream& stream) const override;                        \
    Name##Options options;                                                         \
  };                                                                               \
  KILN_MODULE(Name)
KILN_ADAPTIVE_POOL(AdaptiveAvgPool1d, adaptive_avg_pool1d, ExpandingArray<1>);
KILN_ADAPTIVE_POOL(AdaptiveAvgPool2d, adaptive_avg_pool2d, ExpandingArrayWithOptionalElem<2>);
#undef KILN_ADAPTIVE_POOL

// forward_with_indices also returns each maximum's flat position in the input's spatial dims.
template <size_t D, typename OutputSize>
class AdaptiveMaxPoolNdImpl : public Module {
 public:
  AdaptiveMaxPoolNdImpl(OutputSize output_size) : options(output_size) {}
  explicit AdaptiveMaxPoolNdImpl(const AdaptiveMaxPoolOptions<OutputSize>& options) : options(options) {}
  Tensor forward(const Tensor& input) { return std::get<0>(forward_with_indices(input)); }
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input) {
    if constexpr (D == 1)
      return functional::adaptive_max_pool1d_with_indices(input, options);
    else
      return functional::adaptive_max_pool2d_with_indices(input, options);
  }
  void pretty_print(std::ostream& stream) const override;
  AdaptiveMaxPoolOptions<OutputSize> options;
};
class AdaptiveMaxPool1dImpl : public AdaptiveMaxPoolNdImpl<1, ExpandingArray<1>> {
 public:
  using AdaptiveMaxPoolNdImpl::AdaptiveMaxPoolNdImpl;
};
KILN_MODULE(AdaptiveMaxPool1d);
class AdaptiveMaxPool2dImpl : public AdaptiveMaxPoolNdImpl<2, ExpandingArrayWithOptionalElem<2>> {
 public:
  using AdaptiveMaxPoolNdImpl::AdaptiveMaxPoolNdImpl;
};
KILN_MODULE(AdaptiveMaxPool2d);

// Channel dropout, active only in training mode: zeroes whole channels with probability p.
#define KILN_CHANNEL_DROPOUT(Name, fn)                                                                         \
  class Name##Impl : public Module {                                                                           \
   public:                                                                                                     \
    explicit Name##Impl(const DropoutOptions& options = {});                                                   \
    explicit Name##Impl(double p) : Name##Impl(DropoutOptions(p)) {}                                           \
    Tensor forward(Tensor input) {                                                                             \
      return functional::fn(                                                                                   \
          std::move(input),                                                                                    \
          functional::DropoutFuncOptions().p(options.p()).inplace(options.inplace()).training(is_training())); \
    }                                                                                                          \
    void pretty_print(std::ostream& stream) const override;                                                    \
    DropoutOptions options;                                                                                    \
  };                                                                                                           \
  KILN_MODULE(Name)
KILN_CHANNEL_DROPOUT(Dropout1d, dropout1d);
KILN_CHANNEL_DROPOUT(Dropout2d, dropout2d);
KILN_CHANNEL_DROPOUT(Dropout3d, dropout3d);
#undef KILN_CHANNEL_DROPOUT

// Resamples [N, C, L] or [N, C, H, W] (see functional::interpolate).
class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  UpsampleOptions options;
};
KILN_MODULE(Upsample);

}  // namespace kiln::nn
