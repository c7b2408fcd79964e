// The pieces the per-op kernels (per_op_kernels.cpp) and the tiled executor of unfused kernels
// (tiled_kernels.cpp) share: each dtype's storage and its conversions to and from a compute type,
// loads and stores of strided runs, walks over flat ranges of strided layouts, blocked folds, and
// the per-op loops themselves (compiled once, in per_op_kernels.cpp).
#pragma once
#include <algorithm>
#include <type_traits>
#include <vector>

#include "codegen/backend.h"
#include "tracer/op_scalar_inline.h"

namespace kiln::codegen::per_op {

using ir::Node;
using ir::Op;

// One element of an op in compute type T: float64 and float32 through ir::scalar_op's meaning,
// int64 through ir::wrapping_op's.
template <typename T>
[[gnu::always_inline]] inline T apply(Op op, T a, T b, ScalarType operands) {
  if constexpr (std::is_same_v<T, int64_t>)
    return ir::apply_wrapping_op(op, a, b);
  else
    return T(ir::apply_scalar_op(op, double(a), double(b), operands));
}

// An op over contiguous runs of its operands' values in compute type T (tiles, or the operands'
// own memory where it is already in T, contiguous).
template <typename T>
using Loop = void (*)(const T* const* in, T* out, int64_t n, ScalarType operands);

// The loop of `op` in compute type T (float, double or int64_t), or null where it has none.
template <typename T>
Loop<T> loop_for(Op op);

enum class Compute { Float32, Float64, Int64 };

// The interpreter's arithmetic for `n` (its integer path, else float64), or float32 where that
// gives the same bits: every operand and the value float32 (a comparison's bool aside, and a
// select's condition), the op correctly rounded.
Compute compute_type(const Node& n);

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
inline void coalesce(Shape& sizes, std::vector<Shape*> strides) {
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

}  // namespace kiln::codegen::per_op
