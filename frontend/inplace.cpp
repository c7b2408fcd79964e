// In-place ops: each computes its value out of place and assigns it (Tensor::assign_), which
// records the write, bumps the version counter and, under autograd, rebases the history.
#include <vector>

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

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
Tensor& write(const Tensor& self, const Tensor& result, const char* op) {
  const ScalarType from = result.dtype(), to = self.dtype();
  KILN_CHECK(can_cast(from, to), op, ": result type ", dtype_name(from), " can't be cast to the desired output type ",
             dtype_name(to), " (self ", detail::shape_str(self), ")");
  return self.assign_(result);
}
}  // namespace

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  return write(*this, kiln::add(before(*this), o, alpha), "add_");
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  return write(*this, kiln::add(before(*this), o, alpha), "add_");
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const {
  return write(*this, kiln::sub(before(*this), o, alpha), "sub_");
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const {
  return write(*this, kiln::sub(before(*this), o, alpha), "sub_");
}
Tensor& Tensor::mul_(const Tensor& o) const { return write(*this, kiln::mul(before(*this), o), "mul_"); }
Tensor& Tensor::mul_(const Scalar& o) const { return write(*this, kiln::mul(before(*this), o), "mul_"); }
Tensor& Tensor::div_(const Tensor& o) const { return write(*this, kiln::div(before(*this), o), "div_"); }
Tensor& Tensor::div_(const Scalar& o) const { return write(*this, kiln::div(before(*this), o), "div_"); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  return write(*this, kiln::clamp(before(*this), lo, hi), "clamp_");
}
Tensor& Tensor::zero_() const { return fill_(0); }
Tensor& Tensor::fill_(const Scalar& v) const {
  KILN_CHECK(detail::converts_without_overflow(v, dtype()), "fill_: value ", v.toDouble(),
             " cannot be converted to type ", dtype(), " without overflow (self ", detail::shape_str(*this), ")");
  return assign_(full({}, v, dtype()));
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) const {
  return assign_(kiln::masked_fill(before(*this), mask, v));
}
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) const {
  return write(*this, kiln::addcmul(before(*this), a, b, v), "addcmul_");
}
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) const {
  return write(*this, kiln::addcdiv(before(*this), a, b, v), "addcdiv_");
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) const {
  return write(*this, kiln::lerp(before(*this), end, w), "lerp_");
}
#define KILN_UNARY(name) \
  Tensor& Tensor::name##_() const { return write(*this, kiln::name(before(*this)), #name "_"); }
#define KILN_BINARY(name)                                                                                          \
  Tensor& Tensor::name##_(const Tensor& o) const { return write(*this, kiln::name(before(*this), o), #name "_"); } \
  Tensor& Tensor::name##_(const Scalar& o) const { return write(*this, kiln::name(before(*this), o), #name "_"); }
#include "frontend/elementwise_ops.def"
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string_view> mode) const {
  return write(*this, kiln::div(before(*this), o, mode), "div_");
}
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string_view> mode) const {
  return write(*this, kiln::div(before(*this), o, mode), "div_");
}
Tensor& Tensor::floor_divide_(const Tensor& o) const {
  return write(*this, kiln::floor_divide(before(*this), o), "floor_divide_");
}
Tensor& Tensor::floor_divide_(const Scalar& o) const {
  return write(*this, kiln::floor_divide(before(*this), o), "floor_divide_");
}
#define KILN_INTEGER_UNARY(name, op) \
  Tensor& Tensor::name##_() const { return write(*this, kiln::name(*this), #name "_"); }
#define KILN_INTEGER_BINARY(name, op)                                                                      \
  Tensor& Tensor::name##_(const Tensor& o) const { return write(*this, kiln::name(*this, o), #name "_"); } \
  Tensor& Tensor::name##_(const Scalar& o) const { return write(*this, kiln::name(*this, o), #name "_"); }
#include "frontend/integer_ops.def"
#define KILN_INTEGER_OPERATOR(dunder, name)                                     \
  Tensor& Tensor::__i##dunder##__(const Tensor& o) const { return name##_(o); } \
  Tensor& Tensor::__i##dunder##__(const Scalar& o) const { return name##_(o); }
#include "frontend/integer_ops.def"
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& w) const {
  return write(*this, kiln::lerp(before(*this), end, w), "lerp_");
}
Tensor& Tensor::logit_(std::optional<double> eps) const {
  return write(*this, kiln::logit(before(*this), eps), "logit_");
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf) const {
  return write(*this, kiln::nan_to_num(before(*this), nan, posinf, neginf), "nan_to_num_");
}
Tensor& Tensor::pow_(const Tensor& e) const { return write(*this, kiln::pow(before(*this), e), "pow_"); }
Tensor& Tensor::pow_(const Scalar& e) const { return write(*this, kiln::pow(before(*this), e), "pow_"); }

// The values are made on the host, element by element from the generator as libtorch's CPU
// kernels make them, and written with one copy.
namespace {
template <typename Fill>
Tensor& fill_from_host(const Tensor& self, const char* op, Fill&& fill) {
  KILN_CHECK(self.is_floating_point(), op, ": expected a floating point tensor, got ", detail::shape_str(self));
  const ScalarType host_dtype = self.dtype() == kDouble ? kDouble : kFloat;
  std::vector<unsigned char> host(size_t(self.numel()) * (host_dtype == kDouble ? 8 : 4));
  fill(host.data(), host_dtype, self.numel());
  return self.copy_(detail::copy_of_host_data(host.data(), self.sizes(), host_dtype));
}
}  // namespace

Tensor& Tensor::uniform_(double from, double to) const {
  KILN_CHECK(from <= to, "uniform_: expects to return a [from, to) range, but found from=", from, " > to=", to);
  return fill_from_host(*this, "uniform_",
                        [&](void* data, ScalarType t, int64_t n) { detail::fill_uniform(data, t, n, from, to); });
}
Tensor& Tensor::bernoulli_(double p) const {
  KILN_CHECK(p >= 0 && p <= 1, "bernoulli_: expected p in [0, 1], got ", p, " (self ", detail::shape_str(*this), ")");
  std::vector<float> host(static_cast<size_t>(numel()));
  detail::fill_bernoulli(host.data(), numel(), p);
  return copy_(detail::copy_of_host_data(host.data(), sizes(), kFloat));
}
Tensor& Tensor::normal_(double mean, double std) const {
  KILN_CHECK(std >= 0, "normal_: expects std >= 0.0, but found std ", std);
  return fill_from_host(*this, "normal_",
                        [&](void* data, ScalarType t, int64_t n) { detail::fill_normal(data, t, n, mean, std); });
}

// The scan's dtype must be self's, as libtorch's "Bad in-place call" says.
Tensor& Tensor::cumsum_(int64_t dim, std::optional<ScalarType> dtype) const {
  KILN_CHECK(!dtype || *dtype == this->dtype(), "cumsum_: Bad in-place call: input tensor dtype ", this->dtype(),
             " and output tensor dtype ", *dtype, " should match (self ", detail::shape_str(*this), ")");
  return assign_(kiln::cumsum(before(*this), dim, this->dtype()));
}
Tensor& Tensor::cumprod_(int64_t dim, std::optional<ScalarType> dtype) const {
  KILN_CHECK(!dtype || *dtype == this->dtype(), "cumprod_: Bad in-place call: input tensor dtype ", this->dtype(),
             " and output tensor dtype ", *dtype, " should match (self ", detail::shape_str(*this), ")");
  return assign_(kiln::cumprod(before(*this), dim, this->dtype()));
}

}  // namespace kiln
