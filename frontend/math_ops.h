// Elementwise math beyond frontend/elementwise_ops.def's list, with libtorch's names and
// signatures: tests of values, ops with parameters, and the activations libtorch has as free
// functions (math_ops.cpp, activations.cpp). All are composites of kiln ops.
#pragma once
#include <optional>

#include "frontend/tensor.h"

namespace kiln {

// start + weight * (end - start), computed from the nearer end as libtorch does.
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
// log(x / (1 - x)); with eps, x clamped to [eps, 1 - eps] first.
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
// Bool results; on integer tensors no element is NaN or infinite.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
// NaN, +inf and -inf replaced by `nan` and by posinf and neginf (the dtype's largest and lowest
// finite values unless given).
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
// The n-th derivative of digamma, for n = 0 (digamma) and n = 1 (trigamma).
Tensor polygamma(int64_t n, const Tensor& x);

// --- activations (activations.cpp; nn::functional and the modules call these) ---
// x where x > 0, else scale * alpha * (exp(input_scale * x) - 1), and scale * x above 0.
Tensor elu(const Tensor& x, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, const Scalar& alpha = 1.0);
Tensor leaky_relu(const Tensor& x, const Scalar& negative_slope = 0.01);
// x clamped to [min_val, max_val]; the gradient is 0 at the bounds, as libtorch's.
Tensor hardtanh(const Tensor& x, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor relu6(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor hardswish(const Tensor& x);
Tensor mish(const Tensor& x);
Tensor softsign(const Tensor& x);

}  // namespace kiln
