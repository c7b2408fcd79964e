// In-place ops: each computes its value out of place and assigns it (Tensor::assign_), which
// records the write, bumps the version counter and, under autograd, rebases the history.
#include "frontend/ops.h"

namespace kiln {

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return assign_(kiln::add(*this, o, alpha)); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return assign_(kiln::add(*this, o, alpha)); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return assign_(kiln::sub(*this, o, alpha)); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return assign_(kiln::sub(*this, o, alpha)); }
Tensor& Tensor::mul_(const Tensor& o) { return assign_(kiln::mul(*this, o)); }
Tensor& Tensor::mul_(const Scalar& o) { return assign_(kiln::mul(*this, o)); }
Tensor& Tensor::div_(const Tensor& o) { return assign_(kiln::div(*this, o)); }
Tensor& Tensor::div_(const Scalar& o) { return assign_(kiln::div(*this, o)); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) { return assign_(kiln::clamp(*this, lo, hi)); }
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::fill_(const Scalar& v) { return assign_(full({}, v, dtype())); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) { return assign_(kiln::masked_fill(*this, mask, v)); }
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) { return assign_(kiln::addcmul(*this, a, b, v)); }
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) { return assign_(kiln::addcdiv(*this, a, b, v)); }
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) { return assign_(kiln::lerp(*this, end, w)); }
Tensor& Tensor::sqrt_() { return assign_(kiln::sqrt(*this)); }
Tensor& Tensor::relu_() { return assign_(kiln::relu(*this)); }

}  // namespace kiln
