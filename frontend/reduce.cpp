// Reductions. The IR reduction keeps reduced axes as size 1; keepdim=false is a view on top.
#include <cmath>
#include <limits>

#include "frontend/derivatives.h"
#include "frontend/moments.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"

namespace kiln {

using detail::named;
using detail::primitive;
using detail::wrap_dim;
using ir::Op;

namespace {

// Sorted, unique, non-negative axes; an empty list means every axis (PyTorch's dim=[]).
std::vector<int64_t> normalize_axes(const Tensor& x, IntArrayRef dims, const char* op) {
  std::vector<bool> seen(std::max<int64_t>(x.dim(), 1), false);
  std::vector<int64_t> axes;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
    return axes;
  }
  for (int64_t d : dims) {
    int64_t a = wrap_dim(d, x.dim(), op);
    KILN_CHECK(!seen[a], op, ": dim ", a, " appears multiple times in the list of dims");
    seen[a] = true;
    if (x.dim() > 0) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

Shape kept_shape(const Tensor& x, const std::vector<int64_t>& axes) {
  Shape s = x.sizes().vec();
  for (auto a : axes) s[a] = 1;
  return s;
}

Shape dropped_shape(const Tensor& x, const std::vector<int64_t>& axes) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) s.push_back(x.size(d));
  return s;
}

Tensor drop_axes(const Tensor& r, const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  return keepdim ? r : r.reshape(dropped_shape(x, axes));
}

// `scalar` goes to the node's attrs: ReduceMax with it set sends its gradient to the first
// maximum (detail::amax_to_first).
Tensor reduce(Op op, const Tensor& x, IntArrayRef dims, bool keepdim, ScalarType dtype, const char* name,
              double scalar = 0) {
  auto axes = normalize_axes(x, dims, name);
  Tensor in = x.to(dtype);
  if (op == Op::ReduceMax || op == Op::ReduceMin)
    for (auto a : axes)
      KILN_CHECK(x.size(a) > 0, name, ": expected reduction dim ", a, " to have non-zero size (input ",
                 detail::shape_str(x), ")");
  // The node keeps the reduced axes; the result drops them without a view of its own.
  return primitive(op, {in}, kept_shape(x, axes), dtype, detail::Attrs{axes, scalar},
                   keepdim ? std::nullopt : std::optional<Shape>(dropped_shape(x, axes)));
}

// sum and prod of bool and integer tensors accumulate in int64, as in PyTorch.
ScalarType accumulate_type(const Tensor& x, std::optional<ScalarType> dtype) {
  return dtype ? *dtype : x.is_floating_point() ? x.dtype() : kLong;
}

int64_t count_over(const Tensor& x, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (auto a : axes) n *= x.size(a);
  return n;
}

Tensor arg_reduce(Op op, const Tensor& x, std::optional<int64_t> dim, bool keepdim, const char* name) {
  if (!dim) {
    KILN_CHECK(x.numel() > 0, name, ": expected a non-empty tensor (input ", detail::shape_str(x), ")");
    Tensor r = arg_reduce(op, x.reshape({-1}), 0, false, name);
    return keepdim ? r.reshape(Shape(x.dim(), 1)) : r;
  }
  int64_t d = wrap_dim(*dim, x.dim(), name);
  if (x.dim() == 0) return zeros({}, kLong);
  KILN_CHECK(x.size(d) > 0, name, ": expected reduction dim ", d, " to have non-zero size (input ",
             detail::shape_str(x), ")");
  Tensor r = primitive(op, {x}, kept_shape(x, {d}), kLong, detail::Attrs{{d}});
  return drop_axes(r, x, {d}, keepdim);
}

}  // namespace

Tensor sum(const Tensor& x, std::optional<ScalarType> dtype) {
  return named(sum(x, {}, false, dtype), "SumBackward0", {x});
}
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce(Op::Sum, x, dims, keepdim, accumulate_type(x, dtype), "sum");
}

Tensor mean(const Tensor& x, std::optional<ScalarType> dtype) {
  return named(mean(x, {}, false, dtype), "MeanBackward0", {x});
}
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  ScalarType t = dtype.value_or(x.dtype());
  KILN_CHECK(is_floating(t),
             "mean: could not infer output dtype. Input dtype must be either a floating point "
             "or complex dtype. Got: ",
             x.dtype());
  auto axes = normalize_axes(x, dims, "mean");
  return named(sum(x, dims, keepdim, t) / double(count_over(x, axes)), "MeanBackward1", {x});
}

Tensor prod(const Tensor& x, std::optional<ScalarType> dtype) {
  return named(reduce(Op::Prod, x, {}, false, accumulate_type(x, dtype), "prod"), "ProdBackward0", {x});
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce(Op::Prod, x, {dim}, keepdim, accumulate_type(x, dtype), "prod");
}

Tensor detail::amax_to_first(const Tensor& x, IntArrayRef dims) {
  return reduce(Op::ReduceMax, x, dims, false, x.dtype(), "max_pool2d", 1.0);
}
Tensor amax(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(Op::ReduceMax, x, dims, keepdim, x.dtype(), "amax");
}
Tensor amin(const Tensor& x, IntArrayRef dims, bool keepdim) {
  return reduce(Op::ReduceMin, x, dims, keepdim, x.dtype(), "amin");
}
Tensor max(const Tensor& x) { return named(amax(x), "MaxBackward1", {x}); }
Tensor min(const Tensor& x) { return named(amin(x), "MinBackward1", {x}); }
// max(dim) and min(dim) gather their values at the indices, so that the gradient goes to the
// selected entry alone, as in PyTorch (amax and max() share it among ties).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor indices = arg_reduce(Op::ArgMax, x, dim, true, "max");
  if (x.dim() == 0) return {x.clone(), indices};
  const int64_t d = wrap_dim(dim, x.dim(), "max");
  Tensor values = x.gather(d, indices);
  return keepdim ? std::make_tuple(values, indices) : std::make_tuple(values.squeeze(d), indices.squeeze(d));
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor indices = arg_reduce(Op::ArgMin, x, dim, true, "min");
  if (x.dim() == 0) return {x.clone(), indices};
  const int64_t d = wrap_dim(dim, x.dim(), "min");
  Tensor values = x.gather(d, indices);
  return keepdim ? std::make_tuple(values, indices) : std::make_tuple(values.squeeze(d), indices.squeeze(d));
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(Op::ArgMax, x, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(Op::ArgMin, x, dim, keepdim, "argmin");
}

Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  KILN_CHECK(x.is_floating_point(), "var: only floating point inputs are supported (got ", detail::shape_str(x), ")");
  auto axes = normalize_axes(x, dims, "var");
  const int64_t n = count_over(x, axes);
  Tensor centered = x - mean(x, axes, true);
  return named(sum(centered * centered, axes, keepdim) / double(std::max<int64_t>(n - (unbiased ? 1 : 0), 0)),
               "VarBackward0", {x});
}
// root(s) for a root whose derivative is infinite at s = 0 (std's sqrt of the variance, norm's of
// a sum of powers): there the gradient is 0, as libtorch's std and norm backward mask it, where
// the root's own would be 0 * inf = NaN. The inner where keeps the root's derivative finite at
// the elements the outer one drops.
// s is never negative; s <= 0 rather than s == 0, because a one-element Halide kernel takes
// NaN == 0 as true (the found-not-fixed note of the twenty-first session), and NaN must stay NaN.
template <typename Root>
Tensor root_with_zero_gradient_at_zero(const Tensor& s, Root root) {
  const Tensor at_zero = s <= 0;
  return where(at_zero, 0.0, root(where(at_zero, 1.0, s)));
}

Tensor std(const Tensor& x, IntArrayRef dims, bool unbiased, bool keepdim) {
  KILN_CHECK(x.is_floating_point(), "std: only floating point inputs are supported (got ", detail::shape_str(x), ")");
  normalize_axes(x, dims, "std");  // errors name std, not the var it is made of
  return named(
      root_with_zero_gradient_at_zero(var(x, dims, unbiased, keepdim), [](const Tensor& v) { return sqrt(v); }),
      "StdBackward0", {x});
}

Tensor norm(const Tensor& x, const Scalar& p) { return named(norm(x, p, {}, false), "NormBackward0", {x}); }
Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim) {
  KILN_CHECK(x.is_floating_point(), "norm: only floating point inputs are supported (got ", detail::shape_str(x), ")");
  normalize_axes(x, dims, "norm");  // errors name norm, not the sum it is made of
  const double order = p.toDouble();
  Tensor r = std::isinf(order) ? (order > 0 ? amax(x.abs(), dims, keepdim) : amin(x.abs(), dims, keepdim))
             : order == 0      ? sum(x != 0, dims, keepdim).to(x.dtype())  // counts the nonzeros
             : order == 1      ? sum(x.abs(), dims, keepdim)
             : order == 2
                 ? root_with_zero_gradient_at_zero(sum(x * x, dims, keepdim), [](const Tensor& s) { return sqrt(s); })
                 : root_with_zero_gradient_at_zero(sum(pow(x.abs(), order), dims, keepdim),
                                                   [&](const Tensor& s) { return pow(s, 1.0 / order); });
  return named(r, "NormBackward1", {x});
}

Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim) {
  auto axes = normalize_axes(x, dims, "logsumexp");
  auto [m, log_sum] = detail::log_sum_exp(x.is_floating_point() ? x : x.to(kFloat), axes);
  return named(drop_axes(log_sum + m, x, axes, keepdim), "LogsumexpBackward0", {x});
}

// all and any count, so that an empty reduction is true for all and false for any, as in PyTorch.
Tensor all(const Tensor& x) { return sum(logical_not(x)) == 0; }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) {
  return sum(logical_not(x), wrap_dim(dim, x.dim(), "all"), keepdim) == 0;
}
Tensor any(const Tensor& x) { return sum(x.to(kBool)) > 0; }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) {
  return sum(x.to(kBool), wrap_dim(dim, x.dim(), "any"), keepdim) > 0;
}

Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  tracer::EagerGroup eager_group;
  Tensor xf = dtype ? x.to(*dtype) : x.is_floating_point() ? x : x.to(kFloat);
  int64_t d = wrap_dim(dim, xf.dim(), "softmax");
  if (xf.dim() == 0) return ones_like(xf);
  if (auto native = detail::native::softmax(xf, d, /*log=*/false)) return *native;
  Tensor e = exp(xf - amax(xf, {d}, true).detach());
  return named(e / sum(e, {d}, true), "SoftmaxBackward0", {x});
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  tracer::EagerGroup eager_group;
  Tensor xf = dtype ? x.to(*dtype) : x.is_floating_point() ? x : x.to(kFloat);
  int64_t d = wrap_dim(dim, xf.dim(), "log_softmax");
  if (xf.dim() == 0) return zeros_like(xf);
  if (auto native = detail::native::softmax(xf, d, /*log=*/true)) return *native;
  Tensor shifted = xf - amax(xf, {d}, true).detach();
  return named(shifted - log(sum(exp(shifted), {d}, true)), "LogSoftmaxBackward0", {x});
}

Tensor Tensor::sum(std::optional<ScalarType> t) const { return kiln::sum(*this, t); }
Tensor Tensor::sum(IntArrayRef dims, bool keepdim, std::optional<ScalarType> t) const {
  return kiln::sum(*this, dims, keepdim, t);
}
Tensor Tensor::mean(std::optional<ScalarType> t) const { return kiln::mean(*this, t); }
Tensor Tensor::mean(IntArrayRef dims, bool keepdim, std::optional<ScalarType> t) const {
  return kiln::mean(*this, dims, keepdim, t);
}
Tensor Tensor::prod(std::optional<ScalarType> t) const { return kiln::prod(*this, t); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> t) const {
  return kiln::prod(*this, dim, keepdim, t);
}
Tensor Tensor::max() const { return kiln::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return kiln::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return kiln::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return kiln::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dims, bool keepdim) const { return kiln::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntArrayRef dims, bool keepdim) const { return kiln::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return kiln::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return kiln::argmin(*this, dim, keepdim); }
Tensor Tensor::var(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return kiln::var(*this, dims, unbiased, keepdim);
}
Tensor Tensor::std(IntArrayRef dims, bool unbiased, bool keepdim) const {
  return kiln::std(*this, dims, unbiased, keepdim);
}
Tensor Tensor::norm(const Scalar& p) const { return kiln::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dims, bool keepdim) const {
  return kiln::norm(*this, p, dims, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dims, bool keepdim) const { return kiln::logsumexp(*this, dims, keepdim); }
Tensor Tensor::all() const { return kiln::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return kiln::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return kiln::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return kiln::any(*this, dim, keepdim); }
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> t) const { return kiln::softmax(*this, dim, t); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> t) const { return kiln::log_softmax(*this, dim, t); }

}  // namespace kiln

namespace kiln::detail {

LogSumExp log_sum_exp(const Tensor& x, const std::vector<int64_t>& axes) {
  Tensor m = amax(x, axes, true).detach();
  m = where(m.abs() == std::numeric_limits<double>::infinity(), zeros_like(m), m);
  return {m, log(sum(exp(x - m), axes, true))};
}

Moments shifted_moments(const Tensor& x, const std::vector<int64_t>& axes) {
  Tensor shift = x;
  for (int64_t axis : axes) shift = shift.narrow(axis, 0, 1);
  shift = shift.detach();
  Tensor d = x - shift;
  Tensor mean_d = d.mean(axes, /*keepdim=*/true);
  Tensor var = ((d * d).mean(axes, /*keepdim=*/true) - mean_d * mean_d).clamp_min(0.0);
  return {d - mean_d, mean_d.detach() + shift, var};
}

Moments centered_moments(const Tensor& x, const std::vector<int64_t>& axes) {
  Tensor mean = x.mean(axes, /*keepdim=*/true);
  Tensor centered = x - mean;
  // The variance's deviations take the mean as a constant: the same values (CSE makes them one
  // node with `centered`), and the same gradient, since d var / d mean = -2 mean(x - mean) = 0.
  // Through the mean, the variance's gradient was a sum over each row that needed another row sum
  // first (the gradient of var), a third pass over every row in LayerNorm's backward kernel;
  // without it both sums are taken in one pass, as in PyTorch's closed form.
  // Less (mean - c)^2 with c the detached mean: zero in value, as is its share of the gradient, but
  // for any constant c, mean((x - c)^2) - (mean(x) - c)^2 is the variance, so the second derivative
  // is right too (without it, gradgradcheck failed by the term the detached mean drops). One value
  // per row, forward and backward: no pass over the rows.
  Tensor deviation = x - mean.detach();
  Tensor drift = mean - mean.detach();
  return {centered, mean.detach(), (deviation * deviation).mean(axes, /*keepdim=*/true) - drift * drift};
}

}  // namespace kiln::detail
