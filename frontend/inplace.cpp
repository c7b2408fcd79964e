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

// An op's result written back into self, where libtorch allows it: not a floating-point result
// into an integer or bool tensor, not a number into a bool one (`int_tensor.div_(2)` threw there
// and truncated here). fill_, masked_fill_ and copy_ cast their value, as libtorch's do.
Tensor& write(Tensor& self, const Tensor& result, const char* op) {
  const ScalarType from = result.dtype(), to = self.dtype();
  KILN_CHECK((is_floating(to) || !is_floating(from)) && (to != kBool || from == kBool), op, ": result type ",
             dtype_name(from), " can't be cast to the desired output type ", dtype_name(to), " (self ",
             detail::shape_str(self), ")");
  return self.assign_(result);
}
}  // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  return write(*this, kiln::add(before(*this), o, alpha), "add_");
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  return write(*this, kiln::add(before(*this), o, alpha), "add_");
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  return write(*this, kiln::sub(before(*this), o, alpha), "sub_");
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) {
  return write(*this, kiln::sub(before(*this), o, alpha), "sub_");
}
Tensor& Tensor::mul_(const Tensor& o) { return write(*this, kiln::mul(before(*this), o), "mul_"); }
Tensor& Tensor::mul_(const Scalar& o) { return write(*this, kiln::mul(before(*this), o), "mul_"); }
Tensor& Tensor::div_(const Tensor& o) { return write(*this, kiln::div(before(*this), o), "div_"); }
Tensor& Tensor::div_(const Scalar& o) { return write(*this, kiln::div(before(*this), o), "div_"); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return write(*this, kiln::clamp(before(*this), lo, hi), "clamp_");
}
Tensor& Tensor::zero_() { return fill_(0); }
Tensor& Tensor::fill_(const Scalar& v) {
  KILN_CHECK(detail::converts_without_overflow(v, dtype()), "fill_: value ", v.toDouble(),
             " cannot be converted to type ", dtype(), " without overflow (self ", detail::shape_str(*this), ")");
  return assign_(full({}, v, dtype()));
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) { return assign_(kiln::masked_fill(before(*this), mask, v)); }
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) {
  return write(*this, kiln::addcmul(before(*this), a, b, v), "addcmul_");
}
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) {
  return write(*this, kiln::addcdiv(before(*this), a, b, v), "addcdiv_");
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) {
  return write(*this, kiln::lerp(before(*this), end, w), "lerp_");
}
Tensor& Tensor::sqrt_() { return write(*this, kiln::sqrt(before(*this)), "sqrt_"); }
Tensor& Tensor::relu_() { return write(*this, kiln::relu(before(*this)), "relu_"); }

}  // namespace kiln
