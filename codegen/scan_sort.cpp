#include "codegen/scan_sort.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/parallel.h"

namespace kiln::codegen {
namespace {

using ir::Node;
using ir::Op;

// The rows of a strided view along `dim`: where each starts in the view's buffer and in a
// contiguous output of `out_shape` (the view's shape, but for the extent along `dim`), in
// row-major order of the other dims, and the steps along a row on either side.
struct Rows {
  std::vector<int64_t> in, out;
  int64_t length = 0, in_step = 0, out_step = 0;
  int64_t count() const { return int64_t(in.size()); }
};

Rows rows_along(const ir::View& view, const Shape& out_shape, int64_t dim) {
  Rows r;
  const Shape out_strides = contiguous_strides(out_shape);
  r.length = view.sizes[size_t(dim)];
  r.in_step = view.strides[size_t(dim)];
  r.out_step = out_strides[size_t(dim)];
  const int rank = int(view.sizes.size());
  int64_t count = 1;
  for (int d = 0; d < rank; ++d)
    if (d != dim) count *= view.sizes[size_t(d)];
  r.in.reserve(size_t(count));
  r.out.reserve(size_t(count));
  std::vector<int64_t> at(size_t(rank), 0);
  int64_t in = view.offset, out = 0;
  for (int64_t i = 0; i < count; ++i) {
    r.in.push_back(in);
    r.out.push_back(out);
    for (int d = rank - 1; d >= 0; --d) {  // the next row: an odometer over the other dims
      if (d == dim) continue;
      const size_t u = size_t(d);
      if (++at[u] < view.sizes[u]) {
        in += view.strides[u];
        out += out_strides[u];
        break;
      }
      in -= view.strides[u] * (view.sizes[u] - 1);
      out -= out_strides[u] * (view.sizes[u] - 1);
      at[u] = 0;
    }
  }
  return r;
}

// Rows are split across kiln's threads where they hold enough work (`work`, in element visits)
// to pay for waking them.
template <typename F>
void for_row_slices(int64_t count, int64_t work, F&& rows) {
  parallel_for_ranges(count, grain_for_work(count, work, int64_t(1) << 15), rows);
}

// Calls f with a value of the C++ type that holds elements of `t` (bool as uint8_t).
template <typename F>
void with_element_type(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f(uint8_t());
    case ScalarType::Long: return f(int64_t());
    case ScalarType::Float: return f(float());
    case ScalarType::Double: return f(double());
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Half:
    case ScalarType::BFloat16: break;  // the frontend widens these (frontend/scan_sort.cpp)
  }
  throw Error(detail::concat("scan_sort: no routine for ", dtype_name(t), " (the frontend widens it)"));
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}
// The orders libtorch sorts in: NaN above every number, NaNs equal among themselves.
template <typename T>
bool less_nan_last(T a, T b) {
  return (!is_nan(a) && is_nan(b)) || a < b;
}
template <typename T>
bool greater_nan_first(T a, T b) {
  return (is_nan(a) && !is_nan(b)) || a > b;
}

template <typename T>
const T* input_data(const Node& n, size_t i) {
  const Node& src = *n.inputs[i].node;
  KILN_CHECK(src.computed(), "scan_sort: input ", ir::op_name(src.op), " of ", ir::op_name(n.op), " not computed");
  return static_cast<const T*>(src.result->data());
}

// --- scans ---

// A scan's accumulator: float64 for floating types (libtorch's CPU acc_type: a float32 cumsum is
// summed in float64), int64 for the others, wrapping on overflow.
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename A>
A add(A a, A b) {
  if constexpr (std::is_floating_point_v<A>)
    return a + b;
  else
    return A(uint64_t(a) + uint64_t(b));
}
template <typename A>
A multiply(A a, A b) {
  if constexpr (std::is_floating_point_v<A>)
    return a * b;
  else
    return A(uint64_t(a) * uint64_t(b));
}
// log(exp(x) + exp(acc)), as libtorch's _log_add_exp_helper: NaN propagates, and two infinities of
// one sign give that infinity (not inf - inf).
double log_add_exp(double x, double acc) {
  const double lo = std::isnan(acc) ? acc : std::min(x, acc), hi = std::isnan(acc) ? acc : std::max(x, acc);
  if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
  return x;
}

template <typename T>
void scan_values(Node& n, const Rows& r) {
  const T* x = input_data<T>(n, 0);
  T* out = n.result->as<T>();
  const Op op = n.op;
  KILN_CHECK(op == Op::CumSum || op == Op::CumProd || op == Op::LogCumSumExp, "scan_sort: ", ir::op_name(op),
             " is not a scan of values");
  for_row_slices(r.count(), r.count() * r.length, [&](int64_t lo, int64_t hi) {
    using A = Accumulator<T>;
    for (int64_t row = lo; row < hi; ++row) {
      const T* in = x + r.in[size_t(row)];
      T* o = out + r.out[size_t(row)];
      if (op == Op::LogCumSumExp) {
        if constexpr (std::is_floating_point_v<T>) {
          double acc = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < r.length; ++i)
            o[i * r.out_step] = T(acc = log_add_exp(double(in[i * r.in_step]), acc));
        }
        continue;
      }
      const bool sum = op == Op::CumSum;
      A acc = sum ? A(0) : A(1);
      for (int64_t i = 0; i < r.length; ++i) {
        const A v = A(in[i * r.in_step]);
        acc = sum ? add(acc, v) : multiply(acc, v);
        o[i * r.out_step] = std::is_same_v<T, uint8_t> ? T(acc != 0) : T(acc);  // a bool stays 0 or 1
      }
    }
  });
}

// The position of the running maximum (minimum): a NaN takes it and keeps it until the next NaN,
// and a tie moves it to the later element, as libtorch's cummax and cummin.
template <typename T>
void scan_positions(Node& n, const Rows& r) {
  const T* x = input_data<T>(n, 0);
  int64_t* out = n.result->as<int64_t>();
  const bool max = n.op == Op::CumMaxIndex;
  for_row_slices(r.count(), r.count() * r.length, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const T* in = x + r.in[size_t(row)];
      int64_t* o = out + r.out[size_t(row)];
      T best = r.length > 0 ? in[0] : T();
      int64_t at = 0;
      for (int64_t i = 0; i < r.length; ++i) {
        const T v = in[i * r.in_step];
        if (is_nan(v) || (!is_nan(best) && (max ? v >= best : v <= best))) {
          best = v;
          at = i;
        }
        o[i * r.out_step] = at;
      }
    }
  });
}

// --- orderings ---

// libtorch's quick_select_template (ATen/native/SortingUtils.h), step for step, so that among
// equal values kthvalue picks the position libtorch picks: puts the k-th smallest (0-based) of
// `v` at v[k], swapping `at` along.
template <typename T>
void quick_select(std::vector<T>& v, std::vector<int64_t>& at, int64_t k) {
  auto gt = [](T a, T b) { return (is_nan(a) && !is_nan(b)) || a > b; };
  auto swap = [&](int64_t i, int64_t j) {
    std::swap(v[size_t(i)], v[size_t(j)]);
    std::swap(at[size_t(i)], at[size_t(j)]);
  };
  int64_t lo = 0, hi = int64_t(v.size()) - 1;
  while (true) {
    if (hi <= lo) return;
    if (hi == lo + 1) {
      if (gt(v[size_t(lo)], v[size_t(hi)])) swap(lo, hi);
      return;
    }
    swap(lo + (hi - lo) / 2, lo + 1);  // the median of three as pivot
    if (gt(v[size_t(lo + 1)], v[size_t(hi)])) swap(lo + 1, hi);
    if (gt(v[size_t(lo)], v[size_t(hi)])) swap(lo, hi);
    if (gt(v[size_t(lo + 1)], v[size_t(lo)])) swap(lo + 1, lo);
    int64_t i = lo + 1, j = hi;
    const T pivot = v[size_t(lo)];
    while (true) {
      do ++i;
      while (gt(pivot, v[size_t(i)]));
      do --j;
      while (gt(v[size_t(j)], pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
}

// The positions of one row, ordered as the node says, written to `o` with step `step`.
template <typename T>
void order_row(const Node& n, const T* in, int64_t in_step, int64_t length, int64_t* o, int64_t step,
               std::vector<std::pair<T, int64_t>>& scratch) {
  auto value = [&](int64_t i) { return in[i * in_step]; };
  std::vector<std::pair<T, int64_t>>& q = scratch;
  q.resize(size_t(length));
  for (int64_t i = 0; i < length; ++i) q[size_t(i)] = {value(i), i};
  switch (n.op) {
    case Op::SortIndex: {  // stable, whichever the direction (libtorch's CPU sort is)
      const bool descending = n.ints[1] != 0;
      std::stable_sort(q.begin(), q.end(), [descending](const auto& a, const auto& b) {
        return descending ? greater_nan_first(a.first, b.first) : less_nan_last(a.first, b.first);
      });
      for (int64_t i = 0; i < length; ++i) o[i * step] = q[size_t(i)].second;
      return;
    }
    case Op::TopKIndex: {  // libtorch's topk_impl_loop: a partial sort for small k, else a selection
      const int64_t k = n.ints[1];
      const bool largest = n.ints[2] != 0, sorted = n.ints[3] != 0;
      if (k == 0) return;
      auto before = [largest](const auto& a, const auto& b) {
        return largest ? greater_nan_first(a.first, b.first) : less_nan_last(a.first, b.first);
      };
      if (k * 64 <= length) {
        std::partial_sort(q.begin(), q.begin() + k, q.end(), before);
      } else {
        std::nth_element(q.begin(), q.begin() + (k - 1), q.end(), before);
        if (sorted) std::sort(q.begin(), q.begin() + (k - 1), before);
      }
      for (int64_t i = 0; i < k; ++i) o[i * step] = q[size_t(i)].second;
      return;
    }
    case Op::KthValueIndex: {
      std::vector<T> v(static_cast<size_t>(length));
      std::vector<int64_t> at(static_cast<size_t>(length));
      for (int64_t i = 0; i < length; ++i) v[size_t(i)] = value(i), at[size_t(i)] = i;
      quick_select(v, at, n.ints[1] - 1);
      o[0] = at[size_t(n.ints[1] - 1)];
      return;
    }
    case Op::MedianIndex: {  // libtorch's median_with_indices_impl
      const bool ignore_nan = n.ints[1] != 0;
      int64_t nans = 0;
      for (int64_t i = 0; i < length; ++i) {
        if (!is_nan(value(i))) continue;
        if (!ignore_nan) {  // median: the first NaN
          o[0] = i;
          return;
        }
        ++nans;
      }
      // The lower median in the order (value, position), NaNs last: equal values by position.
      const int64_t nth = (length - nans - 1) / 2;
      std::nth_element(q.begin(), q.begin() + nth, q.end(), [](const auto& a, const auto& b) {
        return a.first < b.first || (a.first == b.first && a.second < b.second) ||
               (is_nan(b.first) && !is_nan(a.first));
      });
      o[0] = q[size_t(nth)].second;
      return;
    }
    case Op::ModeIndex: {  // libtorch's mode: sorted by value, the last entry of the longest run
      std::sort(q.begin(), q.end(), [](const auto& a, const auto& b) { return less_nan_last(a.first, b.first); });
      int64_t run = 0, longest = 0;
      for (int64_t i = 0; i < length; ++i) {
        ++run;
        if (i == length - 1 || q[size_t(i)].first != q[size_t(i + 1)].first) {
          if (run > longest) {
            o[0] = q[size_t(i)].second;
            longest = run;
          }
          run = 0;
        }
      }
      return;
    }
    default: break;
  }
  throw Error(detail::concat("scan_sort: ", ir::op_name(n.op), " does not order one row"));
}

template <typename T>
void order_rows(Node& n) {
  const Rows r = rows_along(n.inputs[0].view, n.shape, n.ints[0]);
  const T* x = input_data<T>(n, 0);
  int64_t* out = n.result->as<int64_t>();
  // A sort visits each element about log2(length) times.
  const int64_t work = r.count() * r.length * (1 + int64_t(std::log2(double(std::max<int64_t>(r.length, 1)))));
  for_row_slices(r.count(), work, [&](int64_t lo, int64_t hi) {
    std::vector<std::pair<T, int64_t>> scratch;
    for (int64_t row = lo; row < hi; ++row)
      order_row(n, x + r.in[size_t(row)], r.in_step, r.length, out + r.out[size_t(row)], r.out_step, scratch);
  });
}

// searchsorted: each value's insertion point in its row of the sorted sequence (input 0, read
// with the values' leading dims), by libtorch's binary search on plain IEEE comparisons (a NaN in
// the sequence is passed over as if it were smaller).
template <typename T>
void search_sorted(Node& n) {
  const ir::View &sequence = n.inputs[0].view, &values = n.inputs[1].view;
  const int64_t last = int64_t(n.shape.size()) - 1;
  const Rows seq = rows_along(sequence, sequence.sizes, last), val = rows_along(values, n.shape, last);
  const T *s = input_data<T>(n, 0), *v = input_data<T>(n, 1);
  int64_t* out = n.result->as<int64_t>();
  const bool right = n.ints[0] != 0;
  const int64_t work = val.count() * val.length * (1 + int64_t(std::log2(double(std::max<int64_t>(seq.length, 1)))));
  for_row_slices(val.count(), work, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const T* bounds = s + seq.in[size_t(row)];
      for (int64_t i = 0; i < val.length; ++i) {
        const T x = v[val.in[size_t(row)] + i * val.in_step];
        int64_t start = 0, end = seq.length;
        while (start < end) {
          const int64_t mid = start + ((end - start) >> 1);
          const T m = bounds[mid * seq.in_step];
          if (right ? !(m > x) : !(m >= x))
            start = mid + 1;
          else
            end = mid;
        }
        out[val.out[size_t(row)] + i * val.out_step] = start;
      }
    }
  });
}

}  // namespace

void run_scan(Node& n) {
  n.result = make_buffer(n.numel() * int64_t(element_size(n.dtype)));
  const Rows r = rows_along(n.inputs[0].view, n.shape, n.ints[0]);
  const bool positions = n.op == Op::CumMaxIndex || n.op == Op::CumMinIndex;
  with_element_type(n.inputs[0].node->dtype, [&](auto t) {
    using T = decltype(t);
    positions ? scan_positions<T>(n, r) : scan_values<T>(n, r);
  });
}

void run_sort(Node& n) {
  n.result = make_buffer(n.numel() * int64_t(sizeof(int64_t)));
  KILN_CHECK(n.dtype == kLong, "scan_sort: ", ir::op_name(n.op), " gives int64 positions, not ", n.dtype);
  const bool search = n.op == Op::SearchSorted;
  with_element_type(n.inputs[search ? 1 : 0].node->dtype, [&](auto t) {
    using T = decltype(t);
    search ? search_sorted<T>(n) : order_rows<T>(n);
  });
}

}  // namespace kiln::codegen
