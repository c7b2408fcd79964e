#include "codegen/per_op_kernels.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "codegen/backend.h"
#include "codegen/per_op_loops.h"
#include "codegen/strided_walk.h"
#include "runtime/config.h"
#include "runtime/parallel.h"
#include "tracer/op_scalar_inline.h"

// libm's functions that glibc's libmvec has in vectors (at most a few ulps from the scalar ones):
// declared so, loops over them call the vector forms, float64 and float32 (8 a vector with AVX2).
#define KILN_VECTOR_MATH(name)                                                  \
  extern "C" double name(double) noexcept __attribute__((simd("notinbranch"))); \
  extern "C" float name##f(float) noexcept __attribute__((simd("notinbranch")));
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
using namespace per_op;

constexpr bool is_elementwise(OpKind k) {
  return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Compare || k == OpKind::Select;
}

// The transcendental functions computed in float32 on float tensors, through libmvec's float
// forms: within a few float ulps of the float64 value rounded (as the compiled kernels' own
// approximations are), at twice the vector width and without conversions.
constexpr bool has_float_math(Op op) {
  constexpr Op ops[] = {Op::Exp,  Op::Exp2,  Op::Expm1, Op::Log,   Op::Log1p, Op::Sin,  Op::Cos,  Op::Tanh, Op::Sinh,
                        Op::Cosh, Op::Asinh, Op::Acosh, Op::Atanh, Op::Atan,  Op::Asin, Op::Acos, Op::Erf,  Op::Erfc};
  for (Op o : ops)
    if (o == op) return true;
  return false;
}

[[gnu::always_inline]] inline float float_math(Op op, float a) {
  switch (op) {
    case Op::Exp: return expf(a);
    case Op::Exp2: return exp2f(a);
    case Op::Expm1: return expm1f(a);
    case Op::Log: return logf(a);
    case Op::Log1p: return log1pf(a);
    case Op::Sin: return sinf(a);
    case Op::Cos: return cosf(a);
    case Op::Tanh: return tanhf(a);
    case Op::Sinh: return sinhf(a);
    case Op::Cosh: return coshf(a);
    case Op::Asinh: return asinhf(a);
    case Op::Acosh: return acoshf(a);
    case Op::Atanh: return atanhf(a);
    case Op::Atan: return atanf(a);
    case Op::Asin: return asinf(a);
    case Op::Acos: return acosf(a);
    case Op::Erf: return erff(a);
    case Op::Erfc: return erfcf(a);
    default: return 0;  // has_float_math says which ops come here
  }
}

// Whether op has a loop in compute type T: int64 for the ops with a wrapping form, float32 for
// those correctly rounded in IEEE arithmetic (computing them in float32 gives the bits that
// float64 rounded to float32 gives) and the float math above, float64 for every elementwise op.
template <typename T>
constexpr bool has_loop(Op op) {
  const OpKind kind = table::kKind[int(op)];
  if (!is_elementwise(kind)) return false;
  if (kind == OpKind::Select) return true;
  if constexpr (std::is_same_v<T, int64_t>) return (table::kTraits[int(op)] & ir::kInt64) != 0;
  if constexpr (std::is_same_v<T, float>) return (table::kTraits[int(op)] & ir::kExact) != 0 || has_float_math(op);
  return true;
}

// Compiled twice, for every x86-64 and for AVX2 (x86-64-v3: 4 float64s a vector, libmvec's AVX2
// forms), the CPU choosing when kiln is loaded.
template <Op op, typename T>
__attribute__((target_clones("default", "arch=x86-64-v3"))) void loop(const T* const* in, T* __restrict__ out,
                                                                      int64_t n, ScalarType operands) {
  constexpr OpKind kind = table::kKind[int(op)];
  const T* __restrict__ a = in[0];
  if constexpr (std::is_same_v<T, float> && has_float_math(op)) {
    for (int64_t i = 0; i < n; ++i) out[i] = float_math(op, a[i]);
  } else if constexpr (kind == OpKind::Unary) {
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
  parallel_for_ranges(count, kGrain, [&](int64_t lo, int64_t hi) {
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
    parallel_for_ranges(sizes[split], grain_for_work(sizes[split], work, kGrain), [&](int64_t lo, int64_t hi) {
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

// Elementwise operands are read at the node's own sizes (views broadcast by zero strides).
bool operands_match(const Node& n) {
  for (const ir::Operand& o : n.inputs)
    if (o.view.sizes != n.shape || o.view.strides.size() != n.shape.size()) return false;
  return true;
}

}  // namespace

namespace per_op {

Compute compute_type(const Node& n) {
  using ir::OpKind;
  namespace table = ir::per_op_table;
  if (computes_on_int64(n)) return Compute::Int64;
  const ScalarType first = n.inputs.empty() ? n.dtype : n.inputs[0].node->dtype;
  if (n.op == Op::Cast && (is_integer(first) || first == kBool)) return Compute::Int64;  // exact
  const OpKind kind = ir::op_kind(n.op);
  bool float32 = ((table::kTraits[int(n.op)] & ir::kExact) != 0 || has_float_math(n.op)) &&
                 (n.dtype == kFloat || (kind == OpKind::Compare && n.dtype == kBool));
  for (size_t j = 0; j < n.inputs.size(); ++j)
    float32 = float32 && (n.inputs[j].node->dtype == kFloat || (kind == OpKind::Select && j == 0));
  return float32 ? Compute::Float32 : Compute::Float64;
}

template <typename T>
Loop<T> loop_for(Op op) {
  return kLoops<T>[int(op)];
}
template Loop<float> loop_for<float>(Op);
template Loop<double> loop_for<double>(Op);
template Loop<int64_t> loop_for<int64_t>(Op);

}  // namespace per_op

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
