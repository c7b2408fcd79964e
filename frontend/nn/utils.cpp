// Gradient clipping: the scaling is recorded lazily; only clip_grad_norm_'s return value is read.
#include "frontend/nn/utils.h"

#include <cmath>
#include <limits>

#include "frontend/autograd.h"
#include "frontend/ops.h"

namespace kiln::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  KILN_CHECK(norm_type >= 0, "clip_grad_norm_: norm_type must not be negative, got ", norm_type);
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;

  std::vector<Tensor> norms;
  Tensor total;
  if (std::isinf(norm_type)) {
    for (const auto& g : grads) norms.push_back(g.abs().max().to(kDouble));
    total = stack(norms).max();
  } else if (norm_type == 0) {
    // libtorch 1.13 counts the parameters here (not their nonzero elements).
    total = full({}, double(grads.size()), kDouble);
  } else {
    for (const auto& g : grads) norms.push_back(g.norm(norm_type).to(kDouble));
    total = stack(norms).norm(norm_type);
  }
  // Scale by max_norm / (norm + 1e-6) where that is below 1; the same kernels either way.
  Tensor coefficient = clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  for (auto& g : grads) g.mul_(coefficient.to(g.dtype()));
  const double total_norm = total.item<double>();
  KILN_CHECK(!error_if_nonfinite || std::isfinite(total_norm), "clip_grad_norm_: the total norm of order ", norm_type,
             " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
             "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=false`");
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  autograd::NoGradGuard no_grad;
  for (const auto& p : parameters) {
    if (!p.grad().defined()) continue;
    Tensor g = p.grad();
    g.clamp_(-clip_value, clip_value);
  }
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace kiln::nn::utils
