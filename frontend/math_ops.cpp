// Composite elementwise math: the hand-written entries of frontend/elementwise_ops.def and the
// ops of frontend/math_ops.h, made of kiln ops.
#include <cmath>
#include <limits>

#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

using detail::named;
using detail::shape_str;

Tensor frac(const Tensor& x) {
  KILN_CHECK(x.is_floating_point(), "frac: not implemented for integer or bool tensors (got ", shape_str(x), ")");
  return named(x - trunc(x), "FracBackward0", {x});
}
Tensor log10(const Tensor& x) { return named(log(x) * (1.0 / std::log(10.0)), "Log10Backward0", {x}); }

// libtorch's remainder: the sign of the divisor (Python's %), from fmod's remainder of truncated
// division moved by one divisor where the signs differ; exact, on integers too.
Tensor remainder(const Tensor& a, const Tensor& b) {
  Tensor r = fmod(a, b);
  Tensor adjust = logical_and(r != 0, (r < 0) != (b < 0));
  return named(where(adjust, r + b, r), "RemainderBackward0", {a, b});
}
// max(a, b) + log1p(exp(-|a - b|)); equal infinities give themselves (their difference is NaN).
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.is_floating_point() || b.is_floating_point(), "logaddexp: expected a floating point input, got ",
             shape_str(a), " and ", shape_str(b));
  Tensor m = maximum(a, b);
  Tensor value = m + log1p(exp(-(a - b).abs()));
  return named(where(logical_and(isinf(a), a == b), m, value), "LogaddexpBackward0", {a, b});
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor diff = end - start;
  return named(where(weight.abs() < 0.5, start + weight * diff, end - diff * (1 - weight)), "LerpBackward1",
               {start, end, weight});
}

Tensor logit(const Tensor& x, std::optional<double> eps) {
  Tensor z = x.is_floating_point() ? x : x.to(kFloat);
  if (eps) z = z.clamp(*eps, 1 - *eps);
  return named(log(z / (1 - z)), "LogitBackward0", {x});
}

Tensor isnan(const Tensor& x) { return x.is_floating_point() ? x != x : zeros(x.sizes(), x.options().dtype(kBool)); }
Tensor isinf(const Tensor& x) {
  return x.is_floating_point() ? x.abs() == std::numeric_limits<double>::infinity()
                               : zeros(x.sizes(), x.options().dtype(kBool));
}
// x - x is 0 for finite x, NaN for NaN and infinities.
Tensor isfinite(const Tensor& x) {
  return x.is_floating_point() ? (x - x) == 0 : ones(x.sizes(), x.options().dtype(kBool));
}

Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  if (!x.is_floating_point()) return x.clone();
  const double largest = x.dtype() == kDouble ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor out = where(x != x, nan.value_or(0.0), x);
  out = where(x == inf, posinf.value_or(largest), out);
  out = where(x == -inf, neginf.value_or(-largest), out);
  return named(out, "NanToNumBackward0", {x});
}

Tensor polygamma(int64_t n, const Tensor& x) {
  KILN_CHECK(n == 0 || n == 1, "polygamma: only n = 0 (digamma) and n = 1 are supported, got n = ", n, " (input ",
             shape_str(x), ")");
  if (n == 0) return digamma(x);
  return detail::primitive(ir::Op::Trigamma, {x.is_floating_point() ? x : x.to(kFloat)}, x.sizes(),
                           x.is_floating_point() ? x.dtype() : kFloat);
}

Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const { return kiln::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return kiln::lerp(*this, end, weight); }
Tensor Tensor::logit(std::optional<double> eps) const { return kiln::logit(*this, eps); }
Tensor Tensor::isnan() const { return kiln::isnan(*this); }
Tensor Tensor::isinf() const { return kiln::isinf(*this); }
Tensor Tensor::isfinite() const { return kiln::isfinite(*this); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  return kiln::nan_to_num(*this, nan, posinf, neginf);
}

}  // namespace kiln
