// Group, instance and local response normalization (normalization_more.h), as libtorch 1.13
// computes them, from kiln's ops: their gradients come from the ops they are made of.
#include "frontend/nn/normalization_more.h"

#include "frontend/autograd.h"
#include "frontend/derivatives.h"
#include "frontend/moments.h"
#include "frontend/nn/init.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::detail::shape_str;

namespace {

// [1, C, 1, ...] for an input of `rank` dims: a per-channel tensor that broadcasts along axis 1.
Shape channel_shape(int64_t rank, int64_t c) {
  Shape s(size_t(rank), 1);
  s[1] = c;
  return s;
}

Tensor scale_shift(Tensor out, const Tensor& weight, const Tensor& bias, int64_t c) {
  if (weight.defined()) out = out * weight.view(channel_shape(out.dim(), c));
  if (bias.defined()) out = out + bias.view(channel_shape(out.dim(), c));
  return out;
}

void check_per_channel(const char* op, const Tensor& input, std::initializer_list<const Tensor*> tensors) {
  const int64_t c = input.size(1);
  for (const Tensor* t : tensors)
    KILN_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == c), op,
               ": expected weight, bias and running "
               "statistics of shape [",
               c, "] for input ", shape_str(input), ", got ", shape_str(*t));
}

}  // namespace

namespace functional {

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
  const char* op = "group_norm";
  KILN_CHECK(input.dim() >= 2 && input.is_floating_point(), op,
             ": expected a floating point input of at least 2 "
             "dimensions (N, C, ...), got ",
             shape_str(input));
  const int64_t n = input.size(0), c = input.size(1), groups = options.num_groups();
  KILN_CHECK(groups > 0 && c % groups == 0, op,
             ": expected number of channels in input to be divisible by "
             "num_groups, but got input of shape ",
             shape_str(input), " and num_groups=", groups);
  check_per_channel(op, input, {&options.weight(), &options.bias()});
  const Tensor grouped = input.reshape({n, groups, -1});
  const auto moments = kiln::detail::centered_moments(grouped, {2});
  const Tensor out = (moments.centered * (moments.var + options.eps()).rsqrt()).view(input.sizes());
  return kiln::detail::named(scale_shift(out, options.weight(), options.bias(), c), "NativeGroupNormBackward0",
                             {input});
}

// ATen's form: the batch folded into the channels ([1, N * C, ...]), then batch_norm with the
// running statistics repeated per sample, whose update is averaged back over the samples.
Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options) {
  const char* op = "instance_norm";
  KILN_CHECK(input.dim() >= 3 && input.is_floating_point(), op,
             ": expected a floating point input of at least 3 "
             "dimensions (N, C, ...), got ",
             shape_str(input));
  const Tensor &running_mean = options.running_mean(), &running_var = options.running_var();
  KILN_CHECK(options.use_input_stats() || (running_mean.defined() && running_var.defined()), op,
             ": expected running_mean and running_var to be defined when use_input_stats is false (input ",
             shape_str(input), ")");
  check_per_channel(op, input, {&options.weight(), &options.bias(), &running_mean, &running_var});
  const int64_t n = input.size(0), c = input.size(1);
  Tensor out;
  if (!options.use_input_stats()) {
    out = kiln::batch_norm(input, {}, {}, running_mean, running_var, false, 0.0, options.eps());
  } else {
    KILN_CHECK(input.numel() / std::max<int64_t>(n * c, 1) > 1, op,
               ": expected more than 1 spatial element when training, got input ", shape_str(input));
    Shape folded = input.sizes().vec();
    folded[1] = n * c;
    folded[0] = 1;
    Tensor mean_rep, var_rep;
    if (running_mean.defined()) mean_rep = running_mean.repeat({n});
    if (running_var.defined()) var_rep = running_var.repeat({n});
    out = kiln::batch_norm(input.reshape(folded), {}, {}, mean_rep, var_rep, true, options.momentum(), options.eps())
              .view(input.sizes());
    autograd::NoGradGuard no_grad;
    if (running_mean.defined()) Tensor(running_mean).copy_(mean_rep.view({n, c}).mean({0}));
    if (running_var.defined()) Tensor(running_var).copy_(var_rep.view({n, c}).mean({0}));
  }
  return scale_shift(out, options.weight(), options.bias(), c);
}

// The sum of squares over a window of channels: the squares padded with size / 2 zero channels
// before and (size - 1) / 2 after, then `size` shifted slices added.
Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options) {
  const char* op = "local_response_norm";
  KILN_CHECK(input.dim() >= 3, op, ": expected 3D or higher dimensionality input (N, C, ...), got ", shape_str(input));
  const int64_t size = options.size(), c = input.size(1);
  KILN_CHECK(size > 0, op, ": size must be positive, got ", size);
  const Tensor squares = input * input;
  Shape before = input.sizes().vec(), after = before;
  before[1] = size / 2;
  after[1] = (size - 1) / 2;
  const Tensor padded = cat({zeros(before, input.options()), squares, zeros(after, input.options())}, 1);
  Tensor window = padded.narrow(1, 0, c);
  for (int64_t j = 1; j < size; ++j) window = window + padded.narrow(1, j, c);
  const Tensor div = (window * (options.alpha() / double(size)) + options.k()).pow(options.beta());
  return input / div;
}

}  // namespace functional

// --- GroupNorm ---

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) {
  KILN_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0,
             "GroupNorm: num_channels must be divisible by num_groups, got num_channels=", options.num_channels(),
             " and num_groups=", options.num_groups());
  reset();
}

void GroupNormImpl::reset() {
  const bool affine = options.affine();
  weight = register_parameter("weight", affine ? kiln::empty({options.num_channels()}) : Tensor(), affine);
  bias = register_parameter("bias", affine ? kiln::empty({options.num_channels()}) : Tensor(), affine);
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return functional::group_norm(
      input, functional::GroupNormFuncOptions(options.num_groups()).weight(weight).bias(bias).eps(options.eps()));
}

void GroupNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::GroupNorm(" << options.num_groups() << ", " << options.num_channels()
         << ", eps=" << options.eps() << ", affine=" << options.affine() << ")";
}

// --- InstanceNorm1d/2d/3d ---

InstanceNormImplBase::InstanceNormImplBase(const InstanceNormOptions& options_, const char* name, int64_t spatial_dims)
    : options(options_), name_(name), spatial_dims_(spatial_dims) {
  KILN_CHECK(options.num_features() > 0, name_, ": num_features must be positive, got ", options.num_features());
  reset();
}

void InstanceNormImplBase::reset() {
  const int64_t c = options.num_features();
  const bool affine = options.affine();
  weight = register_parameter("weight", affine ? kiln::empty({c}) : Tensor(), affine);
  bias = register_parameter("bias", affine ? kiln::empty({c}) : Tensor(), affine);
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", kiln::zeros({c}));
    running_var = register_buffer("running_var", kiln::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", kiln::tensor(int64_t(0)));
  }
  reset_parameters();
}

void InstanceNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  autograd::NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void InstanceNormImplBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor InstanceNormImplBase::forward(const Tensor& input) {
  const int64_t batched = spatial_dims_ + 2;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, name_, ": expected ", batched - 1, "D or ", batched,
             "D input, got ", shape_str(input));
  const bool unbatched = input.dim() == batched - 1;
  const Tensor x = unbatched ? input.unsqueeze(0) : input;
  KILN_CHECK(x.size(1) == options.num_features(), name_, ": expected ", options.num_features(), " channels, got input ",
             shape_str(input));
  const auto func = functional::InstanceNormFuncOptions()
                        .running_mean(running_mean)
                        .running_var(running_var)
                        .weight(weight)
                        .bias(bias)
                        .use_input_stats(is_training() || !options.track_running_stats())
                        .momentum(options.momentum())
                        .eps(options.eps());
  const Tensor out = functional::instance_norm(x, func);
  return unbatched ? out.squeeze(0) : out;
}

void InstanceNormImplBase::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::" << name_ << "(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=" << options.momentum() << ", affine=" << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

void LocalResponseNormImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha()
         << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}

}  // namespace kiln::nn
