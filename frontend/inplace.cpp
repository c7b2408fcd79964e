// In-place ops: each computes its value out of place and assigns it (Tensor::assign_), which
// records the write, bumps the version counter and, under autograd, rebases the history.
#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

namespace {
// The value an in-place op reads from `self`: under autograd, self's current content on a storage
// of its own (the content node is immutable, so this costs no copy). The op's backward may save
// it without tripping the version check that the op's own write triggers: y *= x must work, as it
// does in PyTorch, which saves a clone of self for such ops.
Tensor before(const Tensor& self) {
  if (!autograd::GradMode::is_enabled() || !self.requires_grad() || self.is_leaf()) return self;
  const TensorImpl& impl = *self.unsafeGetTensorImpl();
  auto copy = std::make_shared<TensorImpl>();
  copy->storage = tracer::new_storage(impl.storage->node);
  copy->sizes = impl.sizes;
  copy->strides = impl.strides;
  copy->offset = impl.offset;
  copy->dtype = impl.dtype;
  Tensor t(std::move(copy));
  detail::set_history(t, self.grad_fn(), uint32_t(self.output_nr()));
  return t;
}
}  // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return assign_(kiln::add(before(*this), o, alpha)); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return assign_(kiln::add(before(*this), o, alpha)); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return assign_(kiln::sub(before(*this), o, alpha)); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return assign_(kiln::sub(before(*this), o, alpha)); }
Tensor& Tensor::mul_(const Tensor& o) { return assign_(kiln::mul(before(*this), o)); }
Tensor& Tensor::mul_(const Scalar& o) { return assign_(kiln::mul(before(*this), o)); }
Tensor& Tensor::div_(const Tensor& o) { return assign_(kiln::div(before(*this), o)); }
Tensor& Tensor::div_(const Scalar& o) { return assign_(kiln::div(before(*this), o)); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) { return assign_(kiln::clamp(before(*this), lo, hi)); }
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::fill_(const Scalar& v) { return assign_(full({}, v, dtype())); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) { return assign_(kiln::masked_fill(before(*this), mask, v)); }
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) { return assign_(kiln::addcmul(before(*this), a, b, v)); }
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) { return assign_(kiln::addcdiv(before(*this), a, b, v)); }
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) { return assign_(kiln::lerp(before(*this), end, w)); }
Tensor& Tensor::sqrt_() { return assign_(kiln::sqrt(before(*this))); }
Tensor& Tensor::relu_() { return assign_(kiln::relu(before(*this))); }

}  // namespace kiln
