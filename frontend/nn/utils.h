// nn::utils: gradient clipping, as libtorch 1.13's torch::nn::utils.
#pragma once
#include <vector>

#include "frontend/tensor.h"

namespace kiln::nn::utils {

// Scales the gradients of `parameters` so that their joint norm (of order norm_type, inf for the
// max norm) is at most max_norm, and returns the norm before clipping. Returning it reads a
// value, so this flushes the pending work, as libtorch's synchronizes.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient element into [-clip_value, clip_value] (lazily, reading nothing).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace kiln::nn::utils
