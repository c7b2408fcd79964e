// Scans and orderings (scan_sort.h): each call validates its arguments, records one library op of
// the op table (tracer/ops.def's Scan and Sort kinds) and, for an ordering, gathers the values at
// the positions that op gives, so that autograd sends their gradient to those positions.
#include "frontend/scan_sort.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "frontend/derivatives.h"
#include "frontend/ops.h"

namespace kiln {

using detail::Attrs;
using detail::named;
using detail::primitive;
using detail::shape_str;
using detail::wrap_dim;
using ir::Op;

namespace {

// A 0-d tensor is one element along dim 0 (or -1), as in libtorch: the ops run on it as [1].
Tensor with_a_dim(const Tensor& x) { return x.dim() == 0 ? x.reshape({1}) : x; }
Tensor in_rank_of(const Tensor& r, const Tensor& x) { return x.dim() == 0 ? r.reshape({}) : r; }

// What the library routines (codegen/scan_sort.h) read: bool, int64, float32 or float64. The
// narrower dtypes widen exactly, keeping every order and sum, so a routine needs no type of theirs.
ScalarType routine_dtype(ScalarType t) {
  if (t == kHalf || t == kBFloat16) return kFloat;
  if (t == kByte || t == kChar || t == kShort || t == kInt) return kLong;
  return t;
}
Tensor widened(const Tensor& t) { return t.dtype() == routine_dtype(t.dtype()) ? t : t.to(routine_dtype(t.dtype())); }

ScalarType accumulated(const Tensor& x, std::optional<ScalarType> dtype) {
  return dtype ? *dtype : x.is_floating_point() ? x.dtype() : kLong;
}

Tensor scan(Op op, const Tensor& x, int64_t dim, ScalarType dtype, const char* name) {
  const int64_t d = wrap_dim(dim, x.dim(), name);
  const Tensor in = widened(with_a_dim(x).to(dtype));
  return in_rank_of(primitive(op, {in}, in.sizes().vec(), in.dtype(), Attrs{{d}}).to(dtype), x);
}

// Values of `in` at `positions` along d, and the positions, in x's rank.
std::tuple<Tensor, Tensor> values_at(const Tensor& x, const Tensor& in, const Tensor& positions, int64_t d,
                                     const char* grad_fn) {
  const Tensor values = named(in.gather(d, positions), grad_fn, {x});
  return {in_rank_of(values, x), in_rank_of(positions, x)};
}

// One value per row along d (kthvalue, median, mode): `positions` keeps d as size 1, dropped
// unless keepdim. The grad_fn is named last, so that it is the values' own node.
std::tuple<Tensor, Tensor> value_per_row(const Tensor& x, const Tensor& in, const Tensor& positions, int64_t d,
                                         bool keepdim, const char* grad_fn) {
  Tensor values = in.gather(d, positions), at = positions;
  if (x.dim() == 0) {
    values = values.reshape({}), at = at.reshape({});
  } else if (!keepdim) {
    values = values.squeeze(d), at = at.squeeze(d);
  }
  return {named(values, grad_fn, {x}), at};
}

Tensor sort_positions(const Tensor& in, int64_t d, bool descending) {
  return primitive(Op::SortIndex, {widened(in)}, in.sizes().vec(), kLong, Attrs{{d, descending}});
}

std::tuple<Tensor, Tensor> cumulative_extreme(Op op, const Tensor& x, int64_t dim, const char* name,
                                              const char* grad_fn) {
  const int64_t d = wrap_dim(dim, x.dim(), name);
  const Tensor in = with_a_dim(x);
  return values_at(x, in, primitive(op, {widened(in)}, in.sizes().vec(), kLong, Attrs{{d}}), d, grad_fn);
}

// median, nanmedian and mode along a dim: the op's position per row.
std::tuple<Tensor, Tensor> select_per_row(Op op, const Tensor& x, int64_t dim, bool keepdim, Attrs attrs,
                                          const char* name, const char* grad_fn) {
  const int64_t d = wrap_dim(dim, x.dim(), name);
  const Tensor in = with_a_dim(x);
  KILN_CHECK(in.size(d) > 0, name, ": expected reduction dim ", d, " to have non-zero size (input ", shape_str(x), ")");
  Shape kept = in.sizes().vec();
  kept[size_t(d)] = 1;
  attrs.ints.insert(attrs.ints.begin(), d);
  return value_per_row(x, in, primitive(op, {widened(in)}, kept, kLong, attrs), d, keepdim, grad_fn);
}

// The median of every element. Its gradient is shared among the entries equal to it (NaNs, when
// it is NaN), as libtorch's evenly_distribute_backward does: m + sum(where(equal, x - m, 0)) /
// count is m itself, and has that gradient, where m is finite; at an infinite or NaN median the
// gradient goes to the position picked.
Tensor median_of_all(const Tensor& x, bool ignore_nan, const char* name, const char* grad_fn) {
  if (x.numel() == 0) {  // NaN, as libtorch
    KILN_CHECK(x.is_floating_point(), name, ": expected a non-empty tensor (input ", shape_str(x), ")");
    return full({}, NAN, x.dtype());
  }
  const Tensor flat = x.reshape({-1});
  const Tensor position = primitive(Op::MedianIndex, {widened(flat)}, {1}, kLong, Attrs{{0, ignore_nan}});
  const Tensor picked = flat.gather(0, position).reshape({});
  if (!autograd::GradMode::is_enabled() || !x.requires_grad()) return picked;
  const Tensor m = picked.detach();
  const Tensor equal = where(m != m, flat != flat, flat == m);
  const Tensor shared = m + where(equal, flat - m, 0.0).sum() / equal.sum();
  return named(where(m.isfinite(), shared, picked), grad_fn, {x});
}

// --- unique: computed on the host from the values (the result's size depends on them) ---

// x's elements, flattened, as numbers that compare exactly: float64 or int64.
template <typename F>
auto with_host_values(const Tensor& x, F&& f) {
  if (x.is_floating_point()) return f(x.to_vector<double>());
  return f(x.to_vector<int64_t>());
}

template <typename T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return (!std::isnan(a) && std::isnan(b)) || a < b;
  else
    return a < b;
}

// Items (positions 0..n-1) taken in `order`, runs of equal ones grouped: each group's first item,
// each item's group and each group's size.
struct Groups {
  std::vector<int64_t> first, group_of, counts;
};
template <typename Equal>
Groups group_runs(const std::vector<int64_t>& order, Equal equal) {
  Groups g;
  g.group_of.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !equal(order[i - 1], order[i])) {
      g.first.push_back(order[i]);
      g.counts.push_back(0);
    }
    g.group_of[size_t(order[i])] = int64_t(g.first.size()) - 1;
    ++g.counts.back();
  }
  return g;
}

Tensor host_longs(const std::vector<int64_t>& v, IntArrayRef sizes) {
  return detail::copy_of_host_data(v.data(), sizes, kLong);
}

// The unique items (slices of `items` along d, one per group) with the inverse (shaped
// `inverse_shape`) and the counts, each empty unless asked for.
std::tuple<Tensor, Tensor, Tensor> unique_result(const Tensor& items, int64_t d, const Groups& g,
                                                 IntArrayRef inverse_shape, bool return_inverse, bool return_counts) {
  const int64_t n = int64_t(g.first.size());
  const Tensor unique = items.detach().index_select(d, host_longs(g.first, {n}));
  return {unique, return_inverse ? host_longs(g.group_of, inverse_shape) : empty({0}, kLong),
          return_counts ? host_longs(g.counts, {n}) : empty({0}, kLong)};
}

std::vector<int64_t> identity_order(size_t n) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The slices of x along d: x moved to [x.size(d), slice elements], read on the host.
template <typename T>
std::vector<T> slices_along(const Tensor& x, int64_t d) {
  return x.transpose(0, d).contiguous().reshape({x.size(d), -1}).to_vector<T>();
}

// unique_dim and unique_consecutive with a dim: slices compared element by element, NaN unequal.
std::tuple<Tensor, Tensor, Tensor> unique_slices(const Tensor& x, int64_t dim, bool sort, bool return_inverse,
                                                 bool return_counts, const char* name) {
  const int64_t d = detail::wrap_existing_dim(x, dim, name);
  const int64_t count = x.size(d), width = count == 0 ? 0 : x.numel() / count;
  auto run = [&](const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    auto at = [&](int64_t slice, int64_t i) { return values[size_t(slice * width + i)]; };
    std::vector<int64_t> order = identity_order(size_t(count));
    if (sort)
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        for (int64_t i = 0; i < width; ++i) {
          if (less_nan_last<T>(at(a, i), at(b, i))) return true;
          if (less_nan_last<T>(at(b, i), at(a, i))) return false;
        }
        return false;
      });
    const Groups g = group_runs(order, [&](int64_t a, int64_t b) {
      for (int64_t i = 0; i < width; ++i)
        if (!(at(a, i) == at(b, i))) return false;
      return true;
    });
    return unique_result(x, d, g, {count}, return_inverse, return_counts);
  };
  if (x.is_floating_point()) return run(slices_along<double>(x, d));
  return run(slices_along<int64_t>(x, d));
}

}  // namespace

// --- scans ---

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan(Op::CumSum, x, dim, accumulated(x, dtype), "cumsum");
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype) {
  return scan(Op::CumProd, x, dim, accumulated(x, dtype), "cumprod");
}
Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  KILN_CHECK(x.is_floating_point(), "logcumsumexp: expected a floating point input, got ", shape_str(x));
  return scan(Op::LogCumSumExp, x, dim, x.dtype(), "logcumsumexp");
}
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return cumulative_extreme(Op::CumMaxIndex, x, dim, "cummax", "CummaxBackward0");
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return cumulative_extreme(Op::CumMinIndex, x, dim, "cummin", "CumminBackward0");
}

// --- orderings ---

std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool>, int64_t dim, bool descending) {
  const int64_t d = wrap_dim(dim, x.dim(), "sort");
  const Tensor in = with_a_dim(x);
  return values_at(x, in, sort_positions(in, d, descending), d, "SortBackward0");
}
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  return sort(x, std::optional<bool>(), dim, descending);
}
Tensor argsort(const Tensor& x, bool, int64_t dim, bool descending) {
  const int64_t d = wrap_dim(dim, x.dim(), "argsort");
  return in_rank_of(sort_positions(with_a_dim(x), d, descending), x);
}
Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return argsort(x, true, dim, descending); }
Tensor msort(const Tensor& x) { return std::get<0>(sort(x, 0)); }

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  const int64_t d = wrap_dim(dim, x.dim(), "topk");
  const Tensor in = with_a_dim(x);
  KILN_CHECK(k >= 0 && k <= in.size(d), "topk: selected index k out of range (k ", k, ", dim ", d, " of size ",
             in.size(d), ", input ", shape_str(x), ")");
  Shape shape = in.sizes().vec();
  shape[size_t(d)] = k;
  const Tensor positions = primitive(Op::TopKIndex, {widened(in)}, shape, kLong, Attrs{{d, k, largest, sorted}});
  return values_at(x, in, positions, d, "TopkBackward0");
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, x.dim(), "kthvalue");
  const Tensor in = with_a_dim(x);
  KILN_CHECK(k >= 1 && k <= in.size(d), "kthvalue: selected number k out of range for dimension ", d, " (k ", k,
             ", input ", shape_str(x), ")");
  Shape kept = in.sizes().vec();
  kept[size_t(d)] = 1;
  const Tensor positions = primitive(Op::KthValueIndex, {widened(in)}, kept, kLong, Attrs{{d, k}});
  return value_per_row(x, in, positions, d, keepdim, "KthvalueBackward0");
}

Tensor median(const Tensor& x) { return median_of_all(x, false, "median", "MedianBackward0"); }
Tensor nanmedian(const Tensor& x) { return median_of_all(x, true, "nanmedian", "NanmedianBackward0"); }
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  return select_per_row(Op::MedianIndex, x, dim, keepdim, Attrs{{0}}, "median", "MedianBackward1");
}
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  return select_per_row(Op::MedianIndex, x, dim, keepdim, Attrs{{1}}, "nanmedian", "NanmedianBackward1");
}
std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  return select_per_row(Op::ModeIndex, x, dim, keepdim, Attrs{}, "mode", "ModeBackward0");
}

// --- binary search ---

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  const Tensor& seq = sorted_sequence;
  KILN_CHECK(!out_int32, "searchsorted: out_int32 is not supported, kiln has no int32 tensors (boundaries ",
             shape_str(seq), ")");
  if (side) {
    KILN_CHECK(*side == "left" || *side == "right", "searchsorted: side can only be 'left' or 'right' but got ",
               std::string(*side));
    KILN_CHECK(!right || *side == "right", "searchsorted: side and right can't be set to opposites, got side of ",
               std::string(*side), " while right was True");
    right = *side == "right";
  }
  KILN_CHECK(seq.dim() >= 1, "searchsorted: boundaries tensor should have positive dimension, but got 0 dimension (",
             shape_str(seq), ")");
  const bool same_rows =
      seq.dim() == values.dim() && std::equal(seq.sizes().begin(), seq.sizes().end() - 1, values.sizes().begin());
  KILN_CHECK(seq.dim() == 1 || same_rows,
             "searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor "
             "and input value tensor must match, but we got boundaries tensor ",
             shape_str(seq), " and input value tensor ", shape_str(values));
  Tensor ordered = seq;
  if (sorter && sorter->defined()) {
    KILN_CHECK(sorter->dtype() == kLong && sorter->sizes() == seq.sizes(),
               "searchsorted: sorter must be an int64 tensor of the boundaries' shape, got sorter ", shape_str(*sorter),
               " and boundaries ", shape_str(seq));
    ordered = seq.gather(-1, *sorter);
  }
  const ScalarType common = routine_dtype(promote(seq.dtype(), values.dtype()));
  const Tensor v = with_a_dim(values).to(common);
  Shape rows = v.sizes().vec();
  rows.back() = seq.size(-1);
  const Tensor s = ordered.to(common).expand(rows);  // a 1-D sequence is read by every row
  return in_rank_of(primitive(Op::SearchSorted, {s, v}, v.sizes().vec(), kLong, Attrs{{right}}), values);
}
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  return searchsorted(sorted_sequence, full({}, value, value.type()), out_int32, right, side, sorter);
}
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
  KILN_CHECK(boundaries.dim() == 1, "bucketize: boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(),
             ") (boundaries ", shape_str(boundaries), ")");
  return searchsorted(boundaries, x, out_int32, right);
}
Tensor bucketize(const Scalar& x, const Tensor& boundaries, bool out_int32, bool right) {
  return bucketize(full({}, x, x.type()), boundaries, out_int32, right);
}

// --- unique ---

std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& x, bool, bool return_inverse, bool return_counts) {
  return with_host_values(x, [&](const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    std::vector<int64_t> order = identity_order(values.size());
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return less_nan_last<T>(values[size_t(a)], values[size_t(b)]); });
    const Groups g = group_runs(order, [&](int64_t a, int64_t b) { return values[size_t(a)] == values[size_t(b)]; });
    return unique_result(x.reshape({-1}), 0, g, x.sizes(), return_inverse, return_counts);
  });
}
std::tuple<Tensor, Tensor> _unique(const Tensor& x, bool sorted, bool return_inverse) {
  auto [unique, inverse, counts] = _unique2(x, sorted, return_inverse, false);
  return {unique, inverse};
}
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& x, int64_t dim, bool, bool return_inverse,
                                              bool return_counts) {
  return unique_slices(x, dim, true, return_inverse, return_counts, "unique_dim");
}
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts,
                                                      std::optional<int64_t> dim) {
  if (dim) return unique_slices(x, *dim, false, return_inverse, return_counts, "unique_consecutive");
  return with_host_values(x, [&](const auto& values) {
    const Groups g = group_runs(identity_order(values.size()),
                                [&](int64_t a, int64_t b) { return values[size_t(a)] == values[size_t(b)]; });
    return unique_result(x.reshape({-1}), 0, g, x.sizes(), return_inverse, return_counts);
  });
}

// --- Tensor methods ---

Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return kiln::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const { return kiln::cumprod(*this, dim, dtype); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return kiln::logcumsumexp(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return kiln::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return kiln::cummin(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return kiln::sort(*this, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim, bool descending) const {
  return kiln::sort(*this, stable, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return kiln::argsort(*this, dim, descending); }
Tensor Tensor::argsort(bool stable, int64_t dim, bool descending) const {
  return kiln::argsort(*this, stable, dim, descending);
}
Tensor Tensor::msort() const { return kiln::msort(*this); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return kiln::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return kiln::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return kiln::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const { return kiln::median(*this, dim, keepdim); }
Tensor Tensor::nanmedian() const { return kiln::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
  return kiln::nanmedian(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const { return kiln::mode(*this, dim, keepdim); }

}  // namespace kiln
