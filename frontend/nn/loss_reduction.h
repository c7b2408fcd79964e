// Internal to frontend/nn (no public header includes it): a loss's reduction applied to its
// per-element values, the name checked where the loss runs so that the error names the loss.
#pragma once
#include "frontend/nn/enum.h"
#include "frontend/tensor.h"

namespace kiln::nn::functional {

inline Tensor reduce_loss(const Tensor& loss, const Reduction& reduction, const char* op) {
  const std::string& r = reduction.name();
  if (r == "none") return loss;
  if (r == "sum") return loss.sum();
  KILN_CHECK(r == "mean", op, ": ", r, " is not a valid value for reduction");
  return loss.mean();
}

}  // namespace kiln::nn::functional
