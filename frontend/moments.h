// Mean and biased variance over some axes in one pass, shared by layer_norm and batch_norm.
#pragma once
#include <vector>

#include "frontend/tensor.h"

namespace kiln::detail {

// The values are shifted by the first element along `axes` (a constant for autograd: the variance
// does not depend on it), so E[d^2] - E[d]^2 does not cancel when the mean is large; the two
// means are sibling reductions that fuse into one kernel, forward and backward.
struct Moments {
  Tensor centered;  // x - mean
  Tensor mean;      // keepdim; detached (for running statistics)
  Tensor var;       // keepdim, biased
};
Moments shifted_moments(const Tensor& x, const std::vector<int64_t>& axes);

}  // namespace kiln::detail
