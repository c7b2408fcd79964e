// Statistics that composite ops share: mean and biased variance in one pass (layer_norm,
// batch_norm), and the stable parts of a log-sum-exp (logsumexp, cross_entropy).
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
// The same in two passes, the mean and then the mean of squared deviations: over rows (trailing
// axes, as layer norm's) they are one row kernel that reads x once, and x is read in place only,
// so that its producer (a linear layer's bias add) is computed by the kernels that read it
// rather than written (shifted_moments reads each row's first element too).
Moments centered_moments(const Tensor& x, const std::vector<int64_t>& axes);

// log(sum(exp(x))) over `axes` = max + log_sum, kept apart so that callers add them in the order
// their rounding needs (cross_entropy, as libtorch, rounds (x[t] - max) - log_sum). The maximum is
// a constant for autograd and zero where it is infinite (an all -inf row sums to -inf, not NaN).
struct LogSumExp {
  Tensor max;      // keepdim, detached
  Tensor log_sum;  // keepdim: log(sum(exp(x - max)))
};
LogSumExp log_sum_exp(const Tensor& x, const std::vector<int64_t>& axes);

}  // namespace kiln::detail
