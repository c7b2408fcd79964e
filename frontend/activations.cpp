// The activations libtorch has as free functions, as composites of kiln ops: their gradients and
// fusion come from the ops they are made of. Each is named as libtorch names its backward node.
#include <cmath>
#include <limits>

#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

using detail::named;

namespace {
void check_floating(const Tensor& x, const char* op) {
  KILN_CHECK(x.is_floating_point(), op, ": expected a floating point input, got ", detail::shape_str(x));
}
}  // namespace

Tensor elu(const Tensor& x, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  check_floating(x, "elu");
  const double a = alpha.to<double>(), s = scale.to<double>(), is = input_scale.to<double>();
  Tensor negative = expm1(is == 1 ? x : x * is) * (s * a);
  return named(where(x > 0, s == 1 ? x : x * s, negative), "EluBackward0", {x});
}
// Klambauer et al.'s constants, as libtorch's.
Tensor selu(const Tensor& x) { return elu(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946); }
Tensor celu(const Tensor& x, const Scalar& alpha) {
  KILN_CHECK(alpha.to<double>() != 0, "celu: ZeroDivisionError (alpha 0, input ", detail::shape_str(x), ")");
  return elu(x, alpha, 1, 1.0 / alpha.to<double>());
}
Tensor leaky_relu(const Tensor& x, const Scalar& negative_slope) {
  return named(where(x > 0, x, x * negative_slope), "LeakyReluBackward0", {x});
}
// NaN stays NaN (both comparisons are false).
Tensor hardtanh(const Tensor& x, const Scalar& min_val, const Scalar& max_val) {
  KILN_CHECK(min_val.to<double>() <= max_val.to<double>(), "hardtanh: min_val (", min_val.to<double>(),
             ") cannot be greater than max_val (", max_val.to<double>(), ")");
  Tensor lo = full({}, min_val, x.dtype()), hi = full({}, max_val, x.dtype());
  return named(where(x <= min_val, lo, where(x >= max_val, hi, x)), "HardtanhBackward0", {x});
}
Tensor relu6(const Tensor& x) { return hardtanh(x, 0, 6); }
Tensor hardsigmoid(const Tensor& x) {
  check_floating(x, "hardsigmoid");
  return named(relu6(x + 3.0) * (1.0 / 6), "HardsigmoidBackward0", {x});
}
Tensor hardswish(const Tensor& x) {
  check_floating(x, "hardswish");
  return named(where(x <= -3.0, zeros_like(x), where(x >= 3.0, x, x * (x + 3.0) * (1.0 / 6))), "HardswishBackward0",
               {x});
}
Tensor mish(const Tensor& x) {
  check_floating(x, "mish");
  return named(x * tanh(softplus(x)), "MishBackward0", {x});
}
Tensor softsign(const Tensor& x) {
  check_floating(x, "softsign");
  return x / (x.abs() + 1);
}

}  // namespace kiln
