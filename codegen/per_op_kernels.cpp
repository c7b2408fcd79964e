#include "codegen/per_op_kernels.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "codegen/backend.h"
#include "codegen/strided_walk.h"
#include "runtime/config.h"
#include "runtime/parallel.h"
#include "tracer/op_scalar_inline.h"

// libm's functions that glibc's libmvec has in vectors (at most a few ulps from the scalar ones,
// in float64): declared so, loops over them call the vector forms.
#define KILN_VECTOR_MATH(name) extern "C" double name(double) noexcept __attribute__((simd("notinbranch")));
KILN_VECTOR_MATH(exp)
KILN_VECTOR_MATH(exp2)
KILN_VECTOR_MATH(expm1)
KILN_VECTOR_MATH(log)
KILN_VECTOR_MATH(log1p)
KILN_VECTOR_MATH(sin)
KILN_VECTOR_MATH(cos)
KILN_VECTOR_MATH(tanh)
KILN_VECTOR_MATH(sinh)
KILN_VECTOR_MATH(cosh)
KILN_VECTOR_MATH(asinh)
KILN_VECTOR_MATH(acosh)
KILN_VECTOR_MATH(atanh)
KILN_VECTOR_MATH(atan)
KILN_VECTOR_MATH(asin)
KILN_VECTOR_MATH(acos)
KILN_VECTOR_MATH(erf)
KILN_VECTOR_MATH(erfc)
#undef KILN_VECTOR_MATH

// What tracer/ops.def says of each op, known at compile time (in ir's scope, where its names are).
namespace kiln::ir::per_op_table {
constexpr OpKind kKind[] = {
#define X(name, kind, cost, traits, combine) OpKind::kind,
#include "tracer/ops.def"
#undef X
};
constexpr uint8_t kTraits[] = {
#define X(name, kind, cost, traits, combine) static_cast<uint8_t>(traits),
#include "tracer/ops.def"
#undef X
};
}  // namespace kiln::ir::per_op_table

namespace kiln::codegen {
namespace {

using ir::Node;
using ir::Op;
using ir::OpKind;
namespace table = ir::per_op_table;

constexpr bool is_elementwise(OpKind k) {
  return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Compare || k == OpKind::Select;
}

// One element of an op in compute type T: float64 and float32 through ir::scalar_op's meaning,
// int64 through ir::wrapping_op's.
template <typename T>
[[gnu::always_inline]] inline T apply(Op op, T a, T b, ScalarType operands) {
  if constexpr (std::is_same_v<T, int64_t>)
    return ir::apply_wrapping_op(op, a, b);
  else
    return T(ir::apply_scalar_op(op, double(a), double(b), operands));
}

// Whether op has a loop in compute type T: int64 for the ops with a wrapping form, float32 for
// those correctly rounded in IEEE arithmetic (computing them in float32 gives the bits that
// float64 rounded to float32 gives), float64 for every elementwise op.
template <typename T>
constexpr bool has_loop(Op op) {
  const OpKind kind = table::kKind[int(op)];
  if (!is_elementwise(kind)) return false;
  if (kind == OpKind::Select) return true;
  if constexpr (std::is_same_v<T, int64_t>) return (table::kTraits[int(op)] & ir::kInt64) != 0;
  if constexpr (std::is_same_v<T, float>) return (table::kTraits[int(op)] & ir::kExact) != 0;
  return true;
}

// An op over contiguous runs of its operands' values in compute type T (tiles, or the operands'
// own memory where it is already in T, contiguous).
template <typename T>
using Loop = void (*)(const T* const* in, T* out, int64_t n, ScalarType operands);

// Compiled twice, for every x86-64 and for AVX2 (x86-64-v3: 4 float64s a vector, libmvec's AVX2
// forms), the CPU choosing when kiln is loaded.
template <Op op, typename T>
__attribute__((target_clones("default", "arch=x86-64-v3"))) void loop(const T* const* in, T* __restrict__ out,
                                                                      int64_t n, ScalarType operands) {
  constexpr OpKind kind = table::kKind[int(op)];
  const T* __restrict__ a = in[0];
  if constexpr (kind == OpKind::Unary) {
    for (int64_t i = 0; i < n; ++i) out[i] = apply<T>(op, a[i], T(0), operands);
  } else if constexpr (kind == OpKind::Select) {
    const T* __restrict__ x = in[1];
    const T* __restrict__ y = in[2];
    for (int64_t i = 0; i < n; ++i) {
      const T if_true = x[i], if_false = y[i];  // both loaded: the select becomes a vector blend
      out[i] = a[i] != 0 ? if_true : if_false;
    }
  } else {
    const T* __restrict__ b = in[1];
    for (int64_t i = 0; i < n; ++i) out[i] = apply<T>(op, a[i], b[i], operands);
  }
}

template <Op op, typename T>
constexpr Loop<T> loop_of() {
  if constexpr (has_loop<T>(op))
    return &loop<op, T>;
  else
    return nullptr;
}

// Every op's loop in compute type T, indexed by op (null where it has none).
template <typename T>
constexpr Loop<T> kLoops[] = {
#define X(name, kind, cost, traits, combine) loop_of<Op::name, T>(),
#include "tracer/ops.def"
#undef X
};

// Storage of each dtype, and the conversions of ScalarType's read_element / write_element /
// write_integer_element (runtime/dtype.h), typed so that loops over runs vectorize.
template <ScalarType t>
using Storage = std::conditional_t<
    t == kBool || t == kByte, uint8_t,
    std::conditional_t<
        t == kLong, int64_t,
        std::conditional_t<
            t == kFloat, float,
            std::conditional_t<
                t == kDouble, double,
                std::conditional_t<
                    t == kChar, int8_t,
                    std::conditional_t<
                        t == kShort, int16_t,
                        std::conditional_t<t == kInt, int32_t, std::conditional_t<t == kHalf, Half, BFloat16>>>>>>>>;

template <ScalarType t>
using DtypeTag = std::integral_constant<ScalarType, t>;

// Calls f(DtypeTag<t>()) for the dtype t.
template <typename F>
void with_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f(DtypeTag<ScalarType::Bool>());
    case ScalarType::Long: return f(DtypeTag<ScalarType::Long>());
    case ScalarType::Float: return f(DtypeTag<ScalarType::Float>());
    case ScalarType::Double: return f(DtypeTag<ScalarType::Double>());
    case ScalarType::Byte: return f(DtypeTag<ScalarType::Byte>());
    case ScalarType::Char: return f(DtypeTag<ScalarType::Char>());
    case ScalarType::Short: return f(DtypeTag<ScalarType::Short>());
    case ScalarType::Int: return f(DtypeTag<ScalarType::Int>());
    case ScalarType::Half: return f(DtypeTag<ScalarType::Half>());
    case ScalarType::BFloat16: return f(DtypeTag<ScalarType::BFloat16>());
  }
}

template <ScalarType t, typename T>
[[gnu::always_inline]] inline T load_as(Storage<t> x) {
  if constexpr (t == kBool)
    return T(x != 0);
  else if constexpr (t == kHalf || t == kBFloat16)
    return T(float(x));
  else
    return T(x);
}

// A value of compute type T stored as dtype t: from int64 exactly as write_integer_element
// (integers wrap, floats round once), from a float as write_element (integers truncate as x86).
template <ScalarType t, typename T>
[[gnu::always_inline]] inline Storage<t> store_as(T v) {
  using S = Storage<t>;
  constexpr bool integer_dtype = t == kLong || t == kByte || t == kChar || t == kShort || t == kInt;
  if constexpr (t == kBool) {
    return S(v != 0);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if constexpr (t == kHalf || t == kBFloat16)
      return S(float(v));
    else
      return S(v);
  } else if constexpr (integer_dtype) {
    return S(float_to_integer(double(v), t));
  } else if constexpr (t == kHalf || t == kBFloat16) {
    return S(float(v));
  } else {
    return S(v);
  }
}

template <typename T>
constexpr bool stores_as(ScalarType t) {
  return (std::is_same_v<T, float> && t == kFloat) || (std::is_same_v<T, double> && t == kDouble) ||
         (std::is_same_v<T, int64_t> && t == kLong);
}

// `len` elements of an array of dtype `t`, from element `offset` every `stride`, into dst as T.
template <typename T>
void load_run(const void* base, ScalarType t, int64_t offset, int64_t stride, int64_t len, T* __restrict__ dst) {
  with_dtype(t, [&](auto tag) {
    constexpr ScalarType dtype = decltype(tag)::value;
    const Storage<dtype>* src = static_cast<const Storage<dtype>*>(base) + offset;
    if (stride == 1) {
      for (int64_t k = 0; k < len; ++k) dst[k] = load_as<dtype, T>(src[k]);
    } else if (stride == 0) {
      std::fill(dst, dst + len, load_as<dtype, T>(src[0]));
    } else {
      for (int64_t k = 0; k < len; ++k) dst[k] = load_as<dtype, T>(src[k * stride]);
    }
  });
}

template <typename T>
void store_run(const T* __restrict__ v, void* base, ScalarType t, int64_t begin, int64_t len) {
  with_dtype(t, [&](auto tag) {
    constexpr ScalarType dtype = decltype(tag)::value;
    Storage<dtype>* out = static_cast<Storage<dtype>*>(base) + begin;
    for (int64_t k = 0; k < len; ++k) out[k] = store_as<dtype, T>(v[k]);
  });
}

// Drops the dims of size 1 and merges each dim into the next where every layout in `strides`
// (one stride per dim each) steps over it as over one longer dim. Leaves rank >= 1.
void coalesce(Shape& sizes, std::vector<Shape*> strides) {
  Shape out_sizes;
  std::vector<Shape> out(strides.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !out_sizes.empty();
    for (size_t j = 0; j < strides.size() && merge; ++j) merge = out[j].back() == (*strides[j])[d] * sizes[d];
    if (merge) {
      out_sizes.back() *= sizes[d];
      for (size_t j = 0; j < strides.size(); ++j) out[j].back() = (*strides[j])[d];
      continue;
    }
    out_sizes.push_back(sizes[d]);
    for (size_t j = 0; j < strides.size(); ++j) out[j].push_back((*strides[j])[d]);
  }
  if (out_sizes.empty()) {
    out_sizes.push_back(1);
    for (auto& s : out) s.push_back(0);
  }
  sizes = out_sizes;
  for (size_t j = 0; j < strides.size(); ++j) *strides[j] = out[j];
}

// Calls run(offset, inner stride, length, position) for the runs along the innermost dim that
// cover flat elements [begin, begin + count) of `sizes`, laid out by `strides` from `offset`.
template <typename F>
void for_each_run(const Shape& sizes, const Shape& strides, int64_t offset, int64_t begin, int64_t count, F&& run) {
  const int rank = int(sizes.size());
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t rest = begin, off = offset;
  for (int d = rank - 1; d >= 0; --d) {
    idx[d] = rest % sizes[d];
    rest /= sizes[d];
    off += idx[d] * strides[d];
  }
  const int last = rank - 1;
  for (int64_t pos = 0; pos < count;) {
    const int64_t len = std::min(count - pos, sizes[last] - idx[last]);
    run(off, strides[last], len, pos);
    pos += len;
    off += len * strides[last];
    idx[last] += len;
    for (int d = last; d > 0 && idx[d] == sizes[d]; --d) {
      off += strides[d - 1] - sizes[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Elements per thread below which a loop is not split.
constexpr int64_t kGrain = int64_t(1) << 15;
constexpr int64_t kTile = 1024;  // elements per operand: the tiles of a thread stay in L1

template <typename T>
void elementwise(Node& n, Loop<T> body) {
  const size_t arity = n.inputs.size();
  Shape sizes = n.shape;
  std::vector<Shape> strides(arity);
  std::vector<Shape*> layouts;
  for (size_t j = 0; j < arity; ++j) {
    strides[j] = n.inputs[j].view.strides;
    layouts.push_back(&strides[j]);
  }
  coalesce(sizes, layouts);
  const int64_t count = n.numel();
  n.result = make_buffer(count * int64_t(element_size(n.dtype)));
  void* out = n.result->data();
  if (count == 0) return;
  struct Source {
    const void* base;
    ScalarType dtype;
    int64_t offset;
    bool direct;  // contiguous in T: the loop reads it in place
  };
  std::vector<Source> sources;
  for (size_t j = 0; j < arity; ++j) {
    const ir::Operand& o = n.inputs[j];
    const bool contiguous = sizes.size() == 1 && (strides[j][0] == 1 || sizes[0] == 1);
    sources.push_back(
        {o.node->result->data(), o.node->dtype, o.view.offset, contiguous && stores_as<T>(o.node->dtype)});
  }
  const bool out_direct = stores_as<T>(n.dtype);
  const ScalarType operands = n.inputs[0].node->dtype;
  parallel_slices(count, count, kGrain, [&](int64_t lo, int64_t hi) {
    alignas(64) T tiles[4][kTile];
    for (int64_t start = lo; start < hi; start += kTile) {
      const int64_t len = std::min(kTile, hi - start);
      const T* in[3] = {};
      for (size_t j = 0; j < arity; ++j) {
        const Source& s = sources[j];
        if (s.direct) {
          in[j] = static_cast<const T*>(s.base) + s.offset + start;
          continue;
        }
        T* tile = tiles[j];
        for_each_run(sizes, strides[j], s.offset, start, len,
                     [&](int64_t off, int64_t stride, int64_t run, int64_t pos) {
                       load_run(s.base, s.dtype, off, stride, run, tile + pos);
                     });
        in[j] = tile;
      }
      T* result = out_direct ? static_cast<T*>(out) + start : tiles[3];
      body(in, result, len, operands);
      if (!out_direct) store_run(result, out, n.dtype, start, len);
    }
  });
}

// A fold of a run into one value, in kLanes interleaved partial results (blocked, as the compiled
// kernels sum: more accurate than one running sum, and vectorized).
template <Op combine, typename T>
T fold(const T* __restrict__ x, int64_t n, T identity) {
  constexpr int kLanes = 8;
  T lanes[kLanes];
  std::fill(lanes, lanes + kLanes, identity);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = apply<T>(combine, lanes[j], x[i + j], kDouble);
  T r = identity;
  for (int j = 0; j < kLanes; ++j) r = apply<T>(combine, r, lanes[j], kDouble);
  for (; i < n; ++i) r = apply<T>(combine, r, x[i], kDouble);
  return r;
}

// A reduction over n.ints, accumulating in T (float64, or int64 on the integer path) as the
// interpreter does, then rounded to the node's dtype. Slices of the widest kept dim go to threads.
template <Op combine, typename T>
void reduce(Node& n, T identity) {
  const ir::Operand& in = n.inputs[0];
  Shape sizes = in.view.sizes, in_strides = in.view.strides, out_strides = reduced_strides(sizes, n.ints);
  coalesce(sizes, {&in_strides, &out_strides});
  const int rank = int(sizes.size()), last = rank - 1;
  std::vector<T> acc(size_t(n.numel()), identity);
  int split = -1;
  for (int d = 0; d < rank; ++d)
    if (out_strides[d] != 0 && (split < 0 || sizes[d] > sizes[split])) split = d;
  const void* base = in.node->result->data();
  const ScalarType dtype = in.node->dtype;
  const bool direct = stores_as<T>(dtype);
  const bool reduce_inner = out_strides[last] == 0;
  // Folds the box of `box` sizes starting at the given offsets into acc.
  auto fold_box = [&](const Shape& box, int64_t in_offset, int64_t out_offset) {
    alignas(64) T tile[kTile];
    const int64_t inner = box[last], inner_stride = in_strides[last];
    auto fold_run = [&](int64_t in_off, int64_t out_off) {
      for (int64_t start = 0; start < inner; start += kTile) {
        const int64_t len = std::min(kTile, inner - start);
        const T* x = tile;
        if (direct && inner_stride == 1)
          x = static_cast<const T*>(base) + in_off + start;
        else
          load_run(base, dtype, in_off + start * inner_stride, inner_stride, len, tile);
        if (reduce_inner) {
          acc[size_t(out_off)] = apply<T>(combine, acc[size_t(out_off)], fold<combine>(x, len, identity), kDouble);
        } else {
          T* __restrict__ a = acc.data() + out_off + start;
          for (int64_t k = 0; k < len; ++k) a[k] = apply<T>(combine, a[k], x[k], kDouble);
        }
      }
    };
    for_each_run2(box, in_strides, in_offset, out_strides, out_offset, fold_run);
  };
  const int64_t work = numel_of(sizes);
  if (split < 0 || work == 0) {
    if (work > 0) fold_box(sizes, in.view.offset, 0);
  } else {
    parallel_slices(sizes[split], work, kGrain, [&](int64_t lo, int64_t hi) {
      Shape box = sizes;
      box[split] = hi - lo;
      if (hi > lo) fold_box(box, in.view.offset + lo * in_strides[split], lo * out_strides[split]);
    });
  }
  n.result = make_buffer(n.numel() * int64_t(element_size(n.dtype)));
  store_run(acc.data(), n.result->data(), n.dtype, 0, n.numel());
}

template <typename T>
void reduce(Node& n, T identity) {
  const Op combine = ir::facts(n.op).combine;
  if (combine == Op::Add) return reduce<Op::Add>(n, identity);
  if (combine == Op::Mul) return reduce<Op::Mul>(n, identity);
  if (combine == Op::Max) return reduce<Op::Max>(n, identity);
  return reduce<Op::Min>(n, identity);
}

void constant(Node& n) {
  n.result = make_buffer(n.numel() * int64_t(element_size(n.dtype)));
  with_dtype(n.dtype, [&](auto tag) {
    constexpr ScalarType dtype = decltype(tag)::value;
    auto* out = static_cast<Storage<dtype>*>(n.result->data());
    const Storage<dtype> value =
        is_integer(dtype) ? store_as<dtype, int64_t>(n.int_scalar) : store_as<dtype, double>(n.scalar);  // exact
    std::fill(out, out + n.numel(), value);
  });
}

enum class Compute { Float32, Float64, Int64 };

// The interpreter's arithmetic for `n` (its integer path, else float64), or float32 where that
// gives the same bits: every operand and the value float32 (a comparison's bool aside, and a
// select's condition), the op correctly rounded.
Compute compute_type(const Node& n) {
  if (computes_on_int64(n)) return Compute::Int64;
  const ScalarType first = n.inputs.empty() ? n.dtype : n.inputs[0].node->dtype;
  if (n.op == Op::Cast && (is_integer(first) || first == kBool)) return Compute::Int64;  // exact
  const OpKind kind = ir::op_kind(n.op);
  bool float32 = (table::kTraits[int(n.op)] & ir::kExact) != 0 &&
                 (n.dtype == kFloat || (kind == OpKind::Compare && n.dtype == kBool));
  for (size_t j = 0; j < n.inputs.size(); ++j)
    float32 = float32 && (n.inputs[j].node->dtype == kFloat || (kind == OpKind::Select && j == 0));
  return float32 ? Compute::Float32 : Compute::Float64;
}

// Elementwise operands are read at the node's own sizes (views broadcast by zero strides).
bool operands_match(const Node& n) {
  for (const ir::Operand& o : n.inputs)
    if (o.view.sizes != n.shape || o.view.strides.size() != n.shape.size()) return false;
  return true;
}

}  // namespace

bool has_per_op_kernel(const Node& n) {
  const OpKind kind = ir::op_kind(n.op);
  if (n.op == Op::Const) return true;
  if (kind == OpKind::Reduce) return n.inputs.size() == 1;
  if (!is_elementwise(kind) || !operands_match(n)) return false;
  switch (compute_type(n)) {
    case Compute::Float32: return kLoops<float>[int(n.op)] != nullptr;
    case Compute::Float64: return kLoops<double>[int(n.op)] != nullptr;
    case Compute::Int64: return kLoops<int64_t>[int(n.op)] != nullptr;
  }
  return false;
}

void compute_per_op(Node& n) {
  if (n.op == Op::Const) return constant(n);
  if (ir::op_kind(n.op) == OpKind::Reduce) {
    if (computes_on_int64(n)) return reduce<int64_t>(n, ir::wrapping_reduction_identity(n.op));
    return reduce<double>(n, ir::reduction_identity(n.op));
  }
  switch (compute_type(n)) {
    case Compute::Float32: return elementwise<float>(n, kLoops<float>[int(n.op)]);
    case Compute::Float64: return elementwise<double>(n, kLoops<double>[int(n.op)]);
    case Compute::Int64: return elementwise<int64_t>(n, kLoops<int64_t>[int(n.op)]);
  }
}

}  // namespace kiln::codegen
