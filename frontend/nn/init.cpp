// nn::init. Each fill makes the values on the host (as libtorch's CPU kernels do, element by
// element from the generator) and writes them into the tensor with one in-place copy.
#include "frontend/nn/init.h"

#include <algorithm>
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
  KILN_CHECK(t.dim() >= 2,
             "init: fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
             "(got ",
             kiln::detail::shape_str(t), ")");
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

// libtorch's init functions fill without recording history.
Tensor uniform_(Tensor t, double low, double high) {
  check_float(t, "uniform_");
  autograd::NoGradGuard no_grad;
  return t.uniform_(low, high);
}

Tensor normal_(Tensor t, double mean, double std) {
  check_float(t, "normal_");
  autograd::NoGradGuard no_grad;
  return t.normal_(mean, std);
}

Tensor eye_(Tensor t) {
  KILN_CHECK(t.defined() && t.dim() == 2, "eye_: only tensors with 2 dimensions are supported, got ",
             kiln::detail::shape_str(t));
  autograd::NoGradGuard no_grad;
  t.copy_(eye(t.size(0), t.size(1), t.dtype()));
  return t;
}

Tensor dirac_(Tensor t) {
  KILN_CHECK(t.defined() && t.dim() >= 3 && t.dim() <= 5,
             "dirac_: only tensors with 3, 4, or 5 dimensions are "
             "supported, got ",
             kiln::detail::shape_str(t));
  autograd::NoGradGuard no_grad;
  const int64_t kernel = t.numel() / (t.size(0) * t.size(1));
  int64_t center = 0;  // the kernel's middle element, row-major over the kernel dims
  for (int64_t d = 2; d < t.dim(); ++d) center = center * t.size(d) + t.size(d) / 2;
  std::vector<double> host(size_t(t.numel()), 0.0);
  for (int64_t d = 0; d < std::min(t.size(0), t.size(1)); ++d) host[size_t((d * t.size(1) + d) * kernel + center)] = 1;
  t.copy_(kiln::detail::copy_of_host_data(host.data(), t.sizes(), kDouble));
  return t;
}

namespace {
// The reduced Q [m, n] (m >= n) of a row-major matrix by Householder reflections, in double, its
// columns' signs chosen so that R's diagonal is non-negative (the QR that is unique).
std::vector<double> orthonormal_q(std::vector<double> a, int64_t m, int64_t n) {
  std::vector<double> q(static_cast<size_t>(m * n), 0.0), v(static_cast<size_t>(m));
  std::vector<std::vector<double>> reflectors;
  std::vector<double> r_diagonal(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += a[size_t(i * n + k)] * a[size_t(i * n + k)];
    norm = std::sqrt(norm);
    const double alpha = a[size_t(k * n + k)] > 0 ? -norm : norm;  // reflect away from the column
    std::fill(v.begin(), v.end(), 0.0);
    for (int64_t i = k; i < m; ++i) v[size_t(i)] = a[size_t(i * n + k)];
    v[size_t(k)] -= alpha;
    double vv = 0;
    for (int64_t i = k; i < m; ++i) vv += v[size_t(i)] * v[size_t(i)];
    if (vv > 0)
      for (int64_t j = k; j < n; ++j) {  // a -= 2 v (v . a_j) / (v . v)
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[size_t(i)] * a[size_t(i * n + j)];
        for (int64_t i = k; i < m; ++i) a[size_t(i * n + j)] -= 2 * v[size_t(i)] * dot / vv;
      }
    r_diagonal[size_t(k)] = a[size_t(k * n + k)];
    reflectors.push_back(v);
  }
  // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity.
  for (int64_t j = 0; j < n; ++j) q[size_t(j * n + j)] = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const auto& h = reflectors[size_t(k)];
    double hh = 0;
    for (int64_t i = k; i < m; ++i) hh += h[size_t(i)] * h[size_t(i)];
    if (hh == 0) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += h[size_t(i)] * q[size_t(i * n + j)];
      for (int64_t i = k; i < m; ++i) q[size_t(i * n + j)] -= 2 * h[size_t(i)] * dot / hh;
    }
  }
  for (int64_t j = 0; j < n; ++j)
    if (r_diagonal[size_t(j)] < 0)
      for (int64_t i = 0; i < m; ++i) q[size_t(i * n + j)] = -q[size_t(i * n + j)];
  return q;
}
}  // namespace

Tensor orthogonal_(Tensor t, double gain) {
  KILN_CHECK(t.defined() && t.dim() >= 2, "orthogonal_: only tensors with 2 or more dimensions are supported, got ",
             kiln::detail::shape_str(t));
  check_float(t, "orthogonal_");
  autograd::NoGradGuard no_grad;
  const int64_t rows = t.size(0), columns = t.numel() / rows;
  const std::vector<float> gaussian = randn({rows, columns}).to_vector<float>();  // libtorch's draw
  // QR of the tall one of the matrix and its transpose.
  const bool wide = rows < columns;
  const int64_t m = wide ? columns : rows, n = wide ? rows : columns;
  std::vector<double> a(size_t(m * n));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j) a[size_t(wide ? j * n + i : i * n + j)] = gaussian[size_t(i * columns + j)];
  const std::vector<double> q = orthonormal_q(std::move(a), m, n);
  std::vector<double> host(size_t(rows * columns));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      host[size_t(i * columns + j)] = gain * q[size_t(wide ? j * n + i : i * n + j)];
  t.copy_(kiln::detail::copy_of_host_data(host.data(), t.sizes(), kDouble));
  return t;
}

Tensor sparse_(Tensor t, double sparsity, double std) {
  KILN_CHECK(t.defined() && t.dim() == 2, "sparse_: only tensors with 2 dimensions are supported, got ",
             kiln::detail::shape_str(t));
  check_float(t, "sparse_");
  autograd::NoGradGuard no_grad;
  const int64_t rows = t.size(0), columns = t.size(1);
  const auto zeros_per_column = int64_t(std::ceil(sparsity * double(rows)));
  t.normal_(0, std);
  std::vector<uint8_t> zero(size_t(rows * columns), 0);  // drawn after the values, as libtorch does
  for (int64_t column = 0; column < columns; ++column) {
    const std::vector<int64_t> order = randperm(rows).to_vector<int64_t>();
    for (int64_t i = 0; i < std::min(zeros_per_column, rows); ++i)
      zero[size_t(order[size_t(i)] * columns + column)] = 1;
  }
  t.masked_fill_(kiln::detail::copy_of_host_data(zero.data(), t.sizes(), kBool), 0);
  return t;
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
