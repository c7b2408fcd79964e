// nn::init. Each fill makes the values on the host (as libtorch's CPU kernels do, element by
// element from the generator) and writes them into the tensor with one in-place copy.
#include "frontend/nn/init.h"

#include <cmath>
#include <vector>

#include "frontend/autograd.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::init {

namespace {

void check_float(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined(), op, ": the tensor is undefined");
  KILN_CHECK(t.is_floating_point(), op, ": expected a floating point tensor, got ", kiln::detail::shape_str(t));
}

// Writes `n` values made by `fill` into `t`, without recording history.
template <typename Fill>
Tensor fill_from_host(Tensor t, Fill&& fill) {
  autograd::NoGradGuard no_grad;
  const int64_t n = t.numel();
  if (t.dtype() == kFloat) {
    std::vector<float> host(n);
    fill(host.data(), n);
    t.copy_(kiln::detail::copy_of_host_data(host.data(), t.sizes(), kFloat));
  } else {
    std::vector<double> host(n);
    fill(host.data(), n);
    t.copy_(kiln::detail::copy_of_host_data(host.data(), t.sizes(), kDouble));
  }
  return t;
}

double kaiming_std(const Tensor& t, double a, const FanModeType& mode, const NonlinearityType& nonlinearity) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  const double fan = mode.name() == "fan_in" ? double(fan_in) : double(fan_out);
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}

}  // namespace

double calculate_gain(NonlinearityType nonlinearity, double param) {
  const std::string& n = nonlinearity.name();
  if (n == "tanh") return 5.0 / 3.0;
  if (n == "relu") return std::sqrt(2.0);
  if (n == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  return 1.0;  // linear, sigmoid
}

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& t) {
  KILN_CHECK(t.dim() >= 2, "init: fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
             "(got ", kiln::detail::shape_str(t), ")");
  const int64_t receptive_field = t.dim() > 2 ? t.numel() / (t.size(0) * t.size(1)) : 1;
  return {t.size(1) * receptive_field, t.size(0) * receptive_field};
}

Tensor constant_(Tensor t, Scalar value) {
  KILN_CHECK(t.defined(), "constant_: the tensor is undefined");
  autograd::NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor ones_(Tensor t) { return constant_(std::move(t), 1); }
Tensor zeros_(Tensor t) { return constant_(std::move(t), 0); }

Tensor uniform_(Tensor t, double low, double high) {
  check_float(t, "uniform_");
  KILN_CHECK(low <= high, "uniform_: expects to return a [from, to) range, but found from=", low, " > to=", high);
  return fill_from_host(t, [&](auto* data, int64_t n) {
    kiln::detail::fill_uniform(data, t.dtype(), n, low, high);
  });
}

Tensor normal_(Tensor t, double mean, double std) {
  check_float(t, "normal_");
  KILN_CHECK(std >= 0, "normal_: expects std >= 0.0, but found std ", std);
  return fill_from_host(t, [&](auto* data, int64_t n) {
    kiln::detail::fill_normal(data, t.dtype(), n, mean, std);
  });
}

Tensor kaiming_uniform_(Tensor t, double a, FanModeType mode, NonlinearityType nonlinearity) {
  check_float(t, "kaiming_uniform_");
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  return uniform_(std::move(t), -bound, bound);
}

Tensor kaiming_normal_(Tensor t, double a, FanModeType mode, NonlinearityType nonlinearity) {
  check_float(t, "kaiming_normal_");
  const double std = kaiming_std(t, a, mode, nonlinearity);
  return normal_(std::move(t), 0, std);
}

Tensor xavier_uniform_(Tensor t, double gain) {
  check_float(t, "xavier_uniform_");
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  const double bound = std::sqrt(3.0) * gain * std::sqrt(2.0 / double(fan_in + fan_out));
  return uniform_(std::move(t), -bound, bound);
}

Tensor xavier_normal_(Tensor t, double gain) {
  check_float(t, "xavier_normal_");
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  return normal_(std::move(t), 0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

void default_layer_init_(Tensor weight, Tensor bias) {
  kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(weight);
  (void)fan_out;
  const double bound = fan_in > 0 ? 1 / std::sqrt(double(fan_in)) : 0;
  uniform_(bias, -bound, bound);
}

}  // namespace kiln::nn::init
