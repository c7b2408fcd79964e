// nn::functional over kiln ops; each checks its options and names itself in errors.
#include "frontend/nn/functional.h"

#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/moments.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using kiln::detail::shape_str;

// --- activations ---

Tensor relu(Tensor input, const ReLUFuncOptions& options) {
  return options.inplace() ? input.relu_() : kiln::relu(input);
}

Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options) {
  Tensor out = kiln::detail::named(kiln::where(input > 0, input, input * options.negative_slope()),
                                   "LeakyReluBackward0", {input});
  return options.inplace() ? input.copy_(out) : out;
}

Tensor gelu(const Tensor& input, const GELUFuncOptions& options) { return kiln::gelu(input, options.approximate()); }
Tensor silu(const Tensor& input) { return kiln::silu(input); }
Tensor sigmoid(const Tensor& input) { return kiln::sigmoid(input); }
Tensor tanh(const Tensor& input) { return kiln::tanh(input); }
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options) {
  return kiln::softplus(input, options.beta(), options.threshold());
}
Tensor logsigmoid(const Tensor& input) { return kiln::log_sigmoid(input); }

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
  return kiln::softmax(input, options.dim(), options.dtype());
}
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
  return kiln::log_softmax(input, options.dim(), options.dtype());
}

// --- layers ---

namespace {
// ", 3, 4": the trailing dimensions in a "[*, 3, 4]" shape pattern.
std::string trailing(const std::vector<int64_t>& shape) {
  std::string s;
  for (auto d : shape) s += ", " + std::to_string(d);
  return s;
}
}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return kiln::linear(input, weight, bias);
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  const auto& shape = options.normalized_shape();
  const int64_t k = int64_t(shape.size());
  KILN_CHECK(k >= 1, "layer_norm: normalized_shape must have at least one dimension");
  KILN_CHECK(input.is_floating_point(), "layer_norm: expected a floating point input, got ", shape_str(input));
  bool matches = input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i) matches = input.size(input.dim() - k + i) == shape[i];
  KILN_CHECK(matches, "layer_norm: given normalized_shape=", shape, ", expected input with shape [*", trailing(shape),
             "], but got input ", shape_str(input));
  for (const Tensor* p : {&options.weight(), &options.bias()})
    KILN_CHECK(!p->defined() || p->sizes() == IntArrayRef(shape), "layer_norm: expected weight and bias of shape ",
               shape, ", got ", shape_str(*p));
  if (auto native = kiln::detail::native::layer_norm(input, k, options.weight(), options.bias(), options.eps()))
    return *native;
  std::vector<int64_t> axes;
  for (int64_t i = input.dim() - k; i < input.dim(); ++i) axes.push_back(i);
  tracer::EagerGroup eager_group;
  const auto moments = kiln::detail::centered_moments(input, axes);
  Tensor out = moments.centered * (moments.var + options.eps()).rsqrt();
  if (options.weight().defined()) out = out * options.weight();
  if (options.bias().defined()) out = out + options.bias();
  return kiln::detail::named(out, "NativeLayerNormBackward0", {input});
}

Tensor dropout(Tensor input, const DropoutFuncOptions& options) {
  const double p = options.p();
  KILN_CHECK(p >= 0 && p <= 1, "dropout: dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(input.is_floating_point(), "dropout: expected a floating point input, got ", shape_str(input));
  if (!options.training() || p == 0) return input;
  // Keep each element with probability 1 - p: the mask is drawn on the host, as libtorch draws it.
  Tensor out = p == 1 ? input * 0.0 : input * (kiln::bernoulli(input, 1 - p) * (1.0 / (1 - p)));
  return options.inplace() ? input.copy_(out) : out;
}

Tensor embedding(const Tensor& input, const Tensor& weight) { return kiln::embedding(weight, input); }

Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
  return kiln::conv2d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(),
                      options.groups());
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
  return kiln::max_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                          options.ceil_mode());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
  return kiln::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                          options.count_include_pad(), options.divisor_override());
}
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  KILN_CHECK(options.momentum().has_value(),
             "batch_norm: momentum must be given (nn::BatchNorm handles the "
             "cumulative average)");
  return kiln::batch_norm(input, options.weight(), options.bias(), running_mean, running_var, options.training(),
                          *options.momentum(), options.eps());
}
Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  if (options.mode().is<enumtype::kConstant>()) return kiln::constant_pad_nd(input, options.pad(), options.value());
  return kiln::pad(input, options.pad(), options.mode().name());
}
Tensor one_hot(const Tensor& tensor, int64_t num_classes) { return kiln::one_hot(tensor, num_classes); }

// --- losses ---

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return kiln::mse_loss(input, target, options.reduction());
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return kiln::l1_loss(input, target, options.reduction());
}
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options, double beta) {
  return kiln::smooth_l1_loss(input, target, options.reduction(), beta != 1.0 ? beta : options.beta());
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  return kiln::huber_loss(input, target, options.reduction(), options.delta());
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  return kiln::nll_loss(input, target, options.weight(), options.reduction(), options.ignore_index());
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  return kiln::cross_entropy_loss(input, target, options.weight(), options.reduction(), options.ignore_index(),
                                  options.label_smoothing());
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  return kiln::binary_cross_entropy(input, target, options.weight(), options.reduction());
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  return kiln::binary_cross_entropy_with_logits(input, target, options.weight(), options.pos_weight(),
                                                options.reduction());
}

}  // namespace kiln::nn::functional

namespace kiln {
Tensor dropout(const Tensor& input, double p, bool train) {
  return nn::functional::dropout(input, nn::functional::DropoutFuncOptions().p(p).training(train));
}
}  // namespace kiln
