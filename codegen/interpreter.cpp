// The reference interpreter. Values pass through float64, which keeps the code one loop per op
// kind, and each result is rounded to its dtype; ops whose operands and result are all int64
// (indices, counts, integer arithmetic) run on int64 instead (on_longs), exact and wrapping on
// overflow as in PyTorch, where float64 is inexact above 2^53.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "codegen/backend.h"
#include "codegen/matmul.h"
#include "codegen/scan_sort.h"
#include "codegen/strided_walk.h"
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/stats.h"
#include "tracer/op_scalar.h"
#include "tracer/view_attr.h"

namespace kiln::codegen {
namespace {

using ir::Node;
using ir::Op;
using ir::Operand;
using Values = std::vector<double>;

double load(const void* base, ScalarType t, int64_t i) { return read_element<double>(base, t, i); }

// Calls f(offset in a, offset in b) for each element of `sizes`, in row-major order.
template <typename F>
void for_each_offset2(const Shape& sizes, const Shape& strides_a, int64_t offset_a, const Shape& strides_b,
                      int64_t offset_b, F&& f) {
  const int rank = int(sizes.size());
  if (rank == 0) return f(offset_a, offset_b);
  const int64_t inner = sizes[rank - 1], inner_a = strides_a[rank - 1], inner_b = strides_b[rank - 1];
  for_each_run2(sizes, strides_a, offset_a, strides_b, offset_b, [&](int64_t a, int64_t b) {
    for (int64_t i = 0; i < inner; ++i) f(a + i * inner_a, b + i * inner_b);
  });
}

// Calls f(flat offset) for each element of a strided view, in row-major order of its sizes.
template <typename F>
void for_each_offset(const Shape& sizes, const Shape& strides, int64_t offset, F&& f) {
  for_each_offset2(sizes, strides, offset, strides, offset, [&](int64_t a, int64_t) { f(a); });
}

// An operand's elements in row-major order: as float64, or (T = int64_t, an integer operand's) as
// they are.
template <typename T = double>
std::vector<T> read(const Operand& o) {
  const Node& src = *o.node;
  KILN_CHECK(src.computed(), "interpreter: input ", ir::op_name(src.op), " not computed");
  std::vector<T> v;
  v.reserve(numel_of(o.view.sizes));
  const void* base = src.result->data();
  for_each_offset(o.view.sizes, o.view.strides, o.view.offset, [&](int64_t off) {
    if constexpr (std::is_same_v<T, int64_t>)
      v.push_back(read_element<int64_t>(base, src.dtype, off));
    else
      v.push_back(load(base, src.dtype, off));
  });
  return v;
}

// Rounds each value to the node's dtype: floats to nearest (float16 and bfloat16 through float32,
// as PyTorch computes them); integers truncate and wrap to their width, NaN and values beyond int64
// giving INT64_MIN's wrap, as x86's conversion (and so Halide's kernels and PyTorch on this CPU)
// does, where C++ leaves them undefined.
void store(Node& n, const Values& v) {
  n.result = make_buffer(n.numel() * element_size(n.dtype));
  void* out = n.result->data();
  const int64_t count = n.numel();
  if (n.dtype == kDouble) return void(std::memcpy(out, v.data(), count * sizeof(double)));
  for (int64_t i = 0; i < count; ++i) write_element(out, n.dtype, i, v[i]);
}

// n's input reduced over its axes n.ints: each output starts at `init` and takes the elements
// that fall on it in row-major order, acc = combine(acc, x). (T: float64, or int64 on the int64
// path.)
template <typename T, typename Combine>
std::vector<T> reduce_over_axes(const Node& n, T init, Combine combine) {
  const Operand& in = n.inputs[0];
  const std::vector<T> x = read<T>(in);
  std::vector<T> out(size_t(n.numel()), init);
  int64_t i = 0;
  for_each_offset(in.view.sizes, reduced_strides(in.view.sizes, n.ints), 0,
                  [&](int64_t o) { out[o] = combine(out[o], x[i++]); });
  return out;
}

// NaN wins a max or min fold (ir::scalar_op), as in PyTorch.
void reduce(Node& n) {
  const Op combine = ir::facts(n.op).combine;
  store(n, reduce_over_axes(n, ir::reduction_identity(n.op),
                            [combine](double acc, double v) { return ir::scalar_op(combine, acc, v, kDouble); }));
}

void arg_reduce(Node& n) {
  const Operand& in = n.inputs[0];
  Values x = read(in);
  const int64_t axis = n.ints[0];
  Values best(n.numel(), NAN), out(n.numel(), 0);
  Shape st = reduced_strides(in.view.sizes, {axis});
  const int64_t axis_stride = contiguous_strides(in.view.sizes)[axis];
  const int64_t axis_size = in.view.sizes[axis];
  int64_t i = 0;
  const bool want_max = n.op == Op::ArgMax;
  for_each_offset(in.view.sizes, st, 0, [&](int64_t o) {
    double v = x[i];
    int64_t pos = (i / axis_stride) % axis_size;
    ++i;
    double& b = best[o];
    bool take = pos == 0 || (!std::isnan(b) && (std::isnan(v) || (want_max ? v > b : v < b)));
    if (take) {
      b = v;
      out[o] = double(pos);
    }
  });
  store(n, out);
}

// int64 matmul (BLAS takes floats only): through float64, exact below 2^53.
void matmul(Node& n) {
  if (blas_matmul(n)) return;
  const Shape& a = n.inputs[0].view.sizes;  // [B, M, K]
  const int64_t B = a[0], M = a[1], K = a[2], N = n.shape[2];
  Values x = read(n.inputs[0]), y = read(n.inputs[1]);
  Values out(B * M * N, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) out[(b * M + i) * N + j] += x[(b * M + i) * K + k] * y[(b * K + k) * N + j];
  store(n, out);
}

// Splits a shape around `dim` into (outer, dim size, inner) extents.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
};
Around around(const Shape& s, int64_t dim) {
  Around r;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) (d < dim ? r.outer : d == dim ? r.size : r.inner) *= s[d];
  return r;
}

// Indices of index_select, gather and their adjoints must lie in [0, size), as in PyTorch (no
// counting from the end).
int64_t checked_index(double v, int64_t size, const char* op) {
  const int64_t i = int64_t(v);
  KILN_CHECK(i >= 0 && i < size, op, ": index ", i, " is out of bounds for size ", size);
  return i;
}

// IndexSelect and Gather copy elements as they are, reading the source through its view: a
// batch taken from a whole dataset costs the batch, not the dataset.
void select_elements(Node& n) {
  const Operand& src = n.inputs[0];
  const int64_t dim = n.ints[0];
  const bool per_row = n.op == Op::IndexSelect;  // one index per position along dim
  Values idx = read(n.inputs[1]);
  const size_t es = element_size(n.dtype);
  n.result = make_buffer(n.numel() * es);
  char* out = static_cast<char*>(n.result->data());
  const char* base = static_cast<const char*>(src.node->result->data());
  const Shape& shape = n.shape;
  const int rank = int(shape.size());
  std::vector<int64_t> c(rank, 0);
  const int64_t total = n.numel(), limit = src.view.sizes[dim];
  const char* op = per_row ? "index_select" : "gather";
  // Whole rows (index_select along dim 0 of a source whose rows are contiguous: a batch taken
  // from a dataset) are copied row by row.
  if (per_row && dim == 0 && rank > 0) {
    Shape row_sizes(shape.begin() + 1, shape.end()), row_strides(src.view.strides.begin() + 1, src.view.strides.end());
    bool contiguous_rows = true;
    const Shape want = contiguous_strides(row_sizes);
    for (size_t d = 0; d < row_sizes.size(); ++d) contiguous_rows &= row_sizes[d] == 1 || row_strides[d] == want[d];
    if (contiguous_rows) {
      const int64_t row = numel_of(row_sizes);
      for (int64_t j = 0; j < shape[0]; ++j) {
        const int64_t from = src.view.offset + checked_index(idx[j], limit, op) * src.view.strides[0];
        std::memcpy(out + j * row * es, base + from * es, row * es);
      }
      return;
    }
  }
  for (int64_t f = 0; f < total; ++f) {
    int64_t pos = src.view.offset;
    for (int d = 0; d < rank; ++d)
      if (d != dim) pos += c[d] * src.view.strides[d];
    pos += checked_index(idx[per_row ? c[dim] : f], limit, op) * src.view.strides[dim];
    std::memcpy(out + f * es, base + pos * es, es);
    for (int d = rank - 1; d >= 0 && ++c[d] == shape[d]; --d) c[d] = 0;
  }
}

void gather(Node& n) {
  if (n.numel() > 0) return select_elements(n);
  store(n, Values());
}

void index_add(Node& n) {
  const int64_t dim = n.ints[0];
  Values out = read(n.inputs[0]), idx = read(n.inputs[1]), src = read(n.inputs[2]);
  Around base = around(n.shape, dim);
  const int64_t count = int64_t(idx.size());
  for (int64_t o = 0; o < base.outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t dst = checked_index(idx[j], base.size, "index_add");
      for (int64_t k = 0; k < base.inner; ++k)
        out[(o * base.size + dst) * base.inner + k] += src[(o * count + j) * base.inner + k];
    }
  store(n, out);
}

// The transpose of Gather: out = base, out[i with i[dim] = index[i]] += src[i].
void scatter_add(Node& n) {
  const int64_t dim = n.ints[0];
  const Operand& index_op = n.inputs[1];
  Values idx = read(index_op), out = read(n.inputs[0]), src = read(n.inputs[2]);
  const Shape strides = contiguous_strides(n.shape);
  Shape walk = strides;  // position of an index element in the output, dim aside
  walk[dim] = 0;
  int64_t i = 0;
  for_each_offset(index_op.view.sizes, walk, 0, [&](int64_t pos) {
    out[pos + checked_index(idx[i], n.shape[dim], "scatter_add") * strides[dim]] += src[i];
    ++i;
  });
  store(n, out);
}

// Concatenation moves bytes: each input is copied, run by run, into its window of the output
// (the output's layout, offset to where the input starts along dim). Inputs of another dtype than
// the output's go through float64 values.
void cat(Node& n) {
  const int64_t dim = n.ints[0];
  const size_t es = element_size(n.dtype);
  const Shape out_strides = contiguous_strides(n.shape);
  n.result = make_buffer(n.numel() * int64_t(es));
  char* out = static_cast<char*>(n.result->data());
  int64_t start = 0;
  for (const Operand& in : n.inputs) {
    KILN_CHECK(in.node->computed(), "interpreter: input ", ir::op_name(in.node->op), " of cat not computed");
    const Shape& sizes = in.view.sizes;
    const int64_t window = start * out_strides[size_t(dim)];
    start += sizes[size_t(dim)];
    if (numel_of(sizes) == 0) continue;
    if (sizes.empty()) {
      std::memcpy(out + window * int64_t(es),
                  static_cast<const char*>(in.node->result->data()) + in.view.offset * int64_t(es), es);
      continue;
    }
    if (in.node->dtype != n.dtype) {
      const Values x = read(in);
      Node piece;  // the input converted to the output's dtype, then copied as below
      piece.dtype = n.dtype;
      piece.shape = sizes;
      store(piece, x);
      const char* src = static_cast<const char*>(piece.result->data());
      for_each_offset2(sizes, contiguous_strides(sizes), 0, out_strides, window,
                       [&](int64_t a, int64_t b) { std::memcpy(out + b * int64_t(es), src + a * int64_t(es), es); });
      continue;
    }
    const char* src = static_cast<const char*>(in.node->result->data());
    const int64_t run = sizes.back(), step = in.view.strides.back();
    for_each_run2(sizes, in.view.strides, in.view.offset, out_strides, window, [&](int64_t a, int64_t b) {
      if (step == 1) return void(std::memcpy(out + b * int64_t(es), src + a * int64_t(es), size_t(run) * es));
      for (int64_t k = 0; k < run; ++k)
        std::memcpy(out + (b + k) * int64_t(es), src + (a + k * step) * int64_t(es), es);
    });
  }
}

// The view (`n.ints`) of the base that the value is written or added into.
ir::View target_view(const Node& n) { return ir::unpack_view(n.ints); }

// Elements per thread below which a copy is not split.
constexpr int64_t kInterpreterGrain = int64_t(1) << 18;

// The dim of `view` whose slices write disjoint elements, whatever the other dims (its stride
// exceeds the furthest offset they reach), or -1. A fold's batch axis is one.
int separable_dim(const ir::View& view) {
  int best = -1;
  for (int d = 0; d < int(view.sizes.size()); ++d)
    if (view.sizes[d] > 1 && (best < 0 || view.strides[d] > view.strides[best])) best = d;
  if (best < 0) return -1;
  int64_t reach = 0;
  for (int d = 0; d < int(view.sizes.size()); ++d) {
    if (view.strides[d] < 0) return -1;
    if (d != best) reach += (view.sizes[d] - 1) * view.strides[d];
  }
  return reach < view.strides[best] ? best : -1;
}

template <typename T>
void add_run(T* __restrict__ out, const T* __restrict__ v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += v[i];
}
template <typename T>
void copy_run(T* __restrict__ out, const T* __restrict__ v, int64_t n) {
  std::memcpy(out, v, size_t(n) * sizeof(T));
}

// WriteView and AddView in the node's own type, read straight from the operands' views: these
// pad and fold convolution inputs every training step, so they skip the float64 round trip, and
// large ones split across threads.
template <typename T>
void write_view_typed(Node& n) {
  const Operand &base = n.inputs[0], &value = n.inputs[1];
  n.result = make_buffer(n.numel() * sizeof(T));
  T* out = static_cast<T*>(n.result->data());
  const T* b = static_cast<const T*>(base.node->result->data());
  const T* v = static_cast<const T*>(value.node->result->data());
  if (base.view.sizes.size() == 1 && base.view.strides[0] == 1) {
    parallel_for_ranges(n.numel(), kInterpreterGrain, [&](int64_t lo, int64_t hi) {
      std::memcpy(out + lo, b + base.view.offset + lo, (hi - lo) * sizeof(T));
    });
  } else {
    const Shape out_strides = contiguous_strides(n.shape);
    for_each_offset2(base.view.sizes, out_strides, 0, base.view.strides, base.view.offset,
                     [&](int64_t o, int64_t i) { out[o] = b[i]; });
  }
  const ir::View t = target_view(n);
  const bool add = n.op == Op::AddView;
  // Writes the value's elements of `sizes` at the offsets given, walking the target's and the
  // value's strides `ts` and `vs`.
  auto write = [&](const Shape& sizes, const Shape& ts, int64_t target_offset, const Shape& vs, int64_t value_offset) {
    const size_t rank = sizes.size();
    if (rank > 0 && ts[rank - 1] == 1 && vs[rank - 1] == 1) {
      // Contiguous runs on both sides (a fold's rows): a vector loop per run, not an index per
      // element.
      const int64_t len = sizes[rank - 1];
      return for_each_run2(sizes, ts, target_offset, vs, value_offset, [&](int64_t o, int64_t i) {
        add ? add_run(out + o, v + i, len) : copy_run(out + o, v + i, len);
      });
    }
    if (add)
      for_each_offset2(sizes, ts, target_offset, vs, value_offset, [&](int64_t o, int64_t i) { out[o] += v[i]; });
    else
      for_each_offset2(sizes, ts, target_offset, vs, value_offset, [&](int64_t o, int64_t i) { out[o] = v[i]; });
  };
  const int d = separable_dim(t);
  if (d < 0) return write(t.sizes, t.strides, t.offset, value.view.strides, value.view.offset);
  // Slices along d write disjoint elements: split across threads, and each walked slice by
  // slice (d outermost), so that the target's part of one slice stays in cache while the value
  // is read in order; each element still takes its values in the original order. (d in place,
  // a convolution fold swept the whole target once per window position: conv2's in CnnStep,
  // 3.6M values into 2 MB, took 1.2 ms.)
  auto first = [&](const Shape& x) {
    Shape out{x[d]};
    for (int j = 0; j < int(x.size()); ++j)
      if (j != d) out.push_back(x[j]);
    return out;
  };
  const Shape ts = first(t.strides), vs = first(value.view.strides);
  parallel_for_ranges(
      t.sizes[d], grain_for_work(t.sizes[d], numel_of(t.sizes), kInterpreterGrain), [&](int64_t lo, int64_t hi) {
        Shape sizes = first(t.sizes);
        sizes[0] = hi - lo;
        write(sizes, ts, t.offset + lo * t.strides[d], vs, value.view.offset + lo * value.view.strides[d]);
      });
}

void write_view(Node& n) {
  const bool same_types = n.inputs[0].node->dtype == n.dtype && n.inputs[1].node->dtype == n.dtype;
  if (same_types && n.dtype == kFloat) return write_view_typed<float>(n);
  if (same_types && n.dtype == kDouble) return write_view_typed<double>(n);
  Values out = read(n.inputs[0]), value = read(n.inputs[1]);
  const ir::View t = target_view(n);
  int64_t i = 0;
  if (n.op == Op::AddView)
    for_each_offset(t.sizes, t.strides, t.offset, [&](int64_t off) { out[off] += value[i++]; });
  else
    for_each_offset(t.sizes, t.strides, t.offset, [&](int64_t off) { out[off] = value[i++]; });
  store(n, out);
}

// The integer path: ops on integer operands only, computed in int64 with two's-complement
// wrapping, each result wrapped to its dtype's width (as C++ computes int8 ... int32 in int and
// converts back).
using Longs = std::vector<int64_t>;

void store_longs(Node& n, const Longs& v) {
  n.result = make_buffer(n.numel() * element_size(n.dtype));
  if (n.dtype == kLong) return void(std::memcpy(n.result->data(), v.data(), v.size() * sizeof(int64_t)));
  for (size_t i = 0; i < v.size(); ++i) write_integer_element(n.result->data(), n.dtype, int64_t(i), v[i]);
}

bool is_long(const Operand& o) { return is_integer(o.node->dtype); }

// Whether n runs on the integer path: its result and the operands it computes with are integers.
bool on_longs(const Node& n) {
  const bool integer = is_integer(n.dtype);
  switch (ir::op_kind(n.op)) {
    case ir::OpKind::Unary: return integer && is_long(n.inputs[0]) && ir::has_wrapping_form(n.op);
    case ir::OpKind::Binary:
      return integer && is_long(n.inputs[0]) && is_long(n.inputs[1]) && ir::has_wrapping_form(n.op);
    case ir::OpKind::Compare: return is_long(n.inputs[0]) && is_long(n.inputs[1]);
    case ir::OpKind::Select: return integer && is_long(n.inputs[1]) && is_long(n.inputs[2]);
    case ir::OpKind::Reduce: return integer && is_long(n.inputs[0]);
    case ir::OpKind::Leaf:
    case ir::OpKind::ArgReduce:
    case ir::OpKind::Matmul:
    case ir::OpKind::Gather:
    case ir::OpKind::Cat:
    case ir::OpKind::WriteView:
    case ir::OpKind::Scan:
    case ir::OpKind::Sort: return false;
  }
  return false;
}

void compute_longs(Node& n) {
  switch (ir::op_kind(n.op)) {
    case ir::OpKind::Unary: {
      Longs x = read<int64_t>(n.inputs[0]);
      for (int64_t& v : x) v = ir::wrapping_op(n.op, v, 0);
      return store_longs(n, x);
    }
    case ir::OpKind::Binary: {
      Longs a = read<int64_t>(n.inputs[0]), b = read<int64_t>(n.inputs[1]);
      for (size_t i = 0; i < a.size(); ++i) a[i] = ir::wrapping_op(n.op, a[i], b[i]);
      return store_longs(n, a);
    }
    case ir::OpKind::Compare: {
      Longs a = read<int64_t>(n.inputs[0]), b = read<int64_t>(n.inputs[1]);
      Values out(a.size());
      for (size_t i = 0; i < a.size(); ++i) out[i] = double(ir::wrapping_op(n.op, a[i], b[i]));
      return store(n, out);
    }
    case ir::OpKind::Select: {
      Values c = read(n.inputs[0]);
      Longs a = read<int64_t>(n.inputs[1]), b = read<int64_t>(n.inputs[2]);
      for (size_t i = 0; i < a.size(); ++i) a[i] = c[i] != 0 ? a[i] : b[i];
      return store_longs(n, a);
    }
    case ir::OpKind::Reduce: {
      const Op combine = ir::facts(n.op).combine;
      return store_longs(
          n, reduce_over_axes(n, ir::wrapping_reduction_identity(n.op),
                              [combine](int64_t acc, int64_t v) { return ir::wrapping_op(combine, acc, v); }));
    }
    case ir::OpKind::Leaf:
    case ir::OpKind::ArgReduce:
    case ir::OpKind::Matmul:
    case ir::OpKind::Gather:
    case ir::OpKind::Cat:
    case ir::OpKind::WriteView:
    case ir::OpKind::Scan:
    case ir::OpKind::Sort: break;  // on_longs() is false for these
  }
}

// Integers to float32 (and float16, bfloat16 through it) in one rounding (through float64 it was
// two: 2^62 + 2^38 + 1 came out one float below PyTorch's value).
void longs_to_floats(Node& n) {
  const Longs x = read<int64_t>(n.inputs[0]);
  n.result = make_buffer(x.size() * element_size(n.dtype));
  for (size_t i = 0; i < x.size(); ++i) write_integer_element(n.result->data(), n.dtype, int64_t(i), x[i]);
}

void constant(Node& n) {
  if (is_integer(n.dtype)) return store_longs(n, Longs(size_t(n.numel()), n.int_scalar));  // exact
  store(n, Values(n.numel(), n.scalar));
}

void unary(Node& n) {
  Values x = read(n.inputs[0]);
  if (n.op == Op::Cast && n.dtype == kBool)
    for (double& v : x) v = v != 0;
  else
    for (double& v : x) v = ir::scalar_op(n.op, v, 0, n.inputs[0].node->dtype);
  store(n, x);
}

void binary(Node& n) {
  Values a = read(n.inputs[0]), b = read(n.inputs[1]);
  const ScalarType t = n.inputs[0].node->dtype;
  for (size_t i = 0; i < a.size(); ++i) a[i] = ir::scalar_op(n.op, a[i], b[i], t);
  store(n, a);
}

void where(Node& n) {
  Values c = read(n.inputs[0]), a = read(n.inputs[1]), b = read(n.inputs[2]);
  for (size_t i = 0; i < a.size(); ++i) a[i] = c[i] != 0 ? a[i] : b[i];
  store(n, a);
}

// One case per kind of op: every elementwise op computes through ir::scalar_op (tracer/op_scalar.cpp),
// so a new one needs nothing here; a new kind does not compile until it is handled.
void compute(Node& n) {
  if (on_longs(n)) return compute_longs(n);
  if (n.op == Op::Cast && (n.dtype == kFloat || is_reduced_float(n.dtype)) && is_long(n.inputs[0]))
    return longs_to_floats(n);
  switch (ir::op_kind(n.op)) {
    case ir::OpKind::Leaf:
      if (n.op == Op::Input) throw Error("interpreter: input node without data");
      return constant(n);
    case ir::OpKind::Unary: return unary(n);
    case ir::OpKind::Binary:
    case ir::OpKind::Compare: return binary(n);
    case ir::OpKind::Select: return where(n);
    case ir::OpKind::Reduce: return reduce(n);
    case ir::OpKind::ArgReduce: return arg_reduce(n);
    case ir::OpKind::Matmul: return matmul(n);
    case ir::OpKind::Gather:
      if (n.op == Op::IndexAdd) return index_add(n);
      if (n.op == Op::ScatterAdd) return scatter_add(n);
      return gather(n);  // IndexSelect, Gather
    case ir::OpKind::Cat: return cat(n);
    case ir::OpKind::WriteView: return write_view(n);
    case ir::OpKind::Scan: return run_scan(n);  // codegen/scan_sort.h, typed and parallel over rows
    case ir::OpKind::Sort: return run_sort(n);
  }
}

class Interpreter final : public Backend {
 public:
  const char* name() const override { return "interp"; }
  void run(const fusion::Partition& kernels) override {
    for (size_t i = 0; i < kernels.kernels.size(); ++i) {
      interpret(kernels.kernels[i]);
      for (Node* done : kernels.release[i]) done->result.reset();
    }
  }
};

}  // namespace

Backend& interpreter() {
  static Interpreter interp;
  return interp;
}

// Keeps only the kernel's outputs and what was in memory before (a constant that every kernel
// reading it computes may be another kernel's output, already written: a library call reads it
// later).
void interpret(const fusion::Kernel& k) {
  if (k.kind == fusion::Kernel::Kind::Library) {
    compute(*k.library_node);
    stats_add(&Stats::kernel_launches, 1);
    return;
  }
  std::vector<bool> keep(k.nodes.size(), false);
  for (int o : k.outputs) keep[o] = true;
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    if (k.nodes[i].node->computed())
      keep[i] = true;
    else
      compute(*k.nodes[i].node);
  }
  for (size_t i = 0; i < k.nodes.size(); ++i)
    if (!keep[i]) k.nodes[i].node->result.reset();
  stats_add(&Stats::kernel_launches, int64_t(k.nodes.size()));
}

void run_node(Node& n) {
  compute(n);
  stats_add(&Stats::nodes_executed, 1);
}

bool computes_on_int64(const Node& n) { return on_longs(n); }

}  // namespace kiln::codegen
