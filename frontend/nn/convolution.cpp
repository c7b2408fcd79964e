// Conv2d, the pooling modules and BatchNorm: parameters, buffers and initialization as libtorch
// 1.13 has them; the computation is in frontend/conv.cpp.
#include <cmath>

#include "frontend/autograd.h"
#include "frontend/nn/init.h"
#include "frontend/nn/modules.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::detail::shape_str;

// --- Conv2d ---

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options_) : options(options_) {
  const int64_t groups = options.groups();
  KILN_CHECK(groups > 0 && options.in_channels() > 0 && options.out_channels() > 0,
             "Conv2d: in_channels, "
             "out_channels and groups must be positive, got ",
             options.in_channels(), ", ", options.out_channels(), " and ", groups);
  KILN_CHECK(options.in_channels() % groups == 0 && options.out_channels() % groups == 0, "Conv2d: in_channels (",
             options.in_channels(), ") and out_channels (", options.out_channels(), ") must be divisible by groups (",
             groups, ")");
  reset();
}

void Conv2dImpl::reset() {
  const auto& k = *options.kernel_size();
  weight = register_parameter(
      "weight", kiln::empty({options.out_channels(), options.in_channels() / options.groups(), k[0], k[1]}));
  bias = options.bias() ? register_parameter("bias", kiln::empty({options.out_channels()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { init::default_layer_init_(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& input) {
  if (!options.padding_mode().is<enumtype::kZeros>()) {  // pad first, then convolve without padding
    const auto& p = *options.padding();
    return kiln::conv2d(kiln::pad(input, {p[1], p[1], p[0], p[0]}, options.padding_mode().name()), weight, bias,
                        options.stride(), 0, options.dilation(), options.groups());
  }
  return kiln::conv2d(input, weight, bias, options.stride(), options.padding(), options.dilation(), options.groups());
}

void Conv2dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Conv2d(" << options.in_channels() << ", " << options.out_channels()
         << ", kernel_size=" << options.kernel_size() << ", stride=" << options.stride();
  if ((*options.padding())[0] || (*options.padding())[1]) stream << ", padding=" << options.padding();
  if ((*options.dilation())[0] != 1 || (*options.dilation())[1] != 1) stream << ", dilation=" << options.dilation();
  if (options.groups() != 1) stream << ", groups=" << options.groups();
  if (!options.bias()) stream << ", bias=false";
  if (!options.padding_mode().is<enumtype::kZeros>()) stream << ", padding_mode=" << options.padding_mode().name();
  stream << ")";
}

// --- pooling ---

void MaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::MaxPool2d(kernel_size=" << options.kernel_size()
         << ", stride=" << options.stride() << ", padding=" << options.padding() << ", dilation=" << options.dilation()
         << ", ceil_mode=" << options.ceil_mode() << ")";
}

void AvgPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::AvgPool2d(kernel_size=" << options.kernel_size() << ", stride=" << options.stride()
         << ", padding=" << options.padding() << ")";
}

// --- BatchNorm ---

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options_, const char* name, int64_t min_dim,
                                     int64_t max_dim)
    : options(options_), name_(name), min_dim_(min_dim), max_dim_(max_dim) {
  KILN_CHECK(options.num_features() > 0, name_, ": num_features must be positive, got ", options.num_features());
  reset();
}

void BatchNormImplBase::reset() {
  const int64_t c = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", kiln::empty({c}));
    bias = register_parameter("bias", kiln::empty({c}));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", kiln::zeros({c}));
    running_var = register_buffer("running_var", kiln::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", kiln::tensor(int64_t(0)));
  }
  reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  autograd::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  KILN_CHECK(input.dim() >= min_dim_ && input.dim() <= max_dim_, name_, ": expected ",
             min_dim_ == max_dim_ ? std::to_string(min_dim_) + "D" : "2D or 3D", " input, got ", shape_str(input));
  KILN_CHECK(input.size(1) == options.num_features(), name_, ": expected ", options.num_features(),
             " channels (axis 1), got input ", shape_str(input));
  double momentum = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    autograd::NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum()) momentum = 1.0 / double(num_batches_tracked.item<int64_t>());  // cumulative average
  }
  const bool batch_stats = is_training() || !options.track_running_stats();
  return kiln::batch_norm(input, weight, bias, running_mean, running_var, batch_stats, momentum, options.eps());
}

void BatchNormImplBase::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::" << name_ << "(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum())
    stream << *options.momentum();
  else
    stream << "None";
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
}

}  // namespace kiln::nn
