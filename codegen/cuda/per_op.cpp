#include "codegen/cuda/per_op.h"

#include <filesystem>

#include "codegen/cuda/ops.h"
#include "codegen/per_op_loops.h"
#include "runtime/hash.h"
#include "tracer/op_scalar.h"

namespace kiln::codegen::cuda {
namespace {

using ir::Node;
using ir::Op;
using ir::OpKind;

constexpr ScalarType kDtypes[] = {kBool, kLong, kFloat, kDouble, kByte, kChar, kShort, kInt, kHalf, kBFloat16};

// A compute class: the dtype values are loaded as, computed in and stored from.
const char* class_name(ScalarType c) { return c == kFloat ? "f32" : c == kDouble ? "f64" : c == kLong ? "i64" : "b"; }

bool is_elementwise(OpKind k) {
  return k == OpKind::Unary || k == OpKind::Binary || k == OpKind::Compare || k == OpKind::Select;
}

// How the kernels index: a flat element's offset in each operand (`count` of them), from the
// row-major coordinates over `sizes` (PerOpArgs's fields).
constexpr const char* kTypes = R"cuda(
struct kiln_per_op_args {
  long long count, sizes[8], offsets[3], strides[3][8];
  double f;
  long long i;
  int rank, dtypes[3], out_dtype, unused;
};
struct kiln_per_op_reduce_args {
  long long outputs, inner, offset, kept_sizes[8], kept_strides[8], red_sizes[8], red_strides[8];
  int kept_rank, red_rank, in_dtype, out_dtype;
};
)cuda";

// The host's structs are passed as these, byte for byte.
static_assert(sizeof(PerOpArgs) == 328 && sizeof(PerOpReduceArgs) == 296, "per_op.h's structs must match kTypes");

// kiln_load_<class>(p, dtype, i): element i of memory of any dtype as a value of the class, and
// kiln_store_<class>: a value stored as any dtype; the conversions of the fused kernels (ops.h).
std::string conversions() {
  std::string out;
  for (ScalarType c : {kFloat, kDouble, kLong, kBool}) {
    const std::string cls = class_name(c);
    out += std::string("__device__ __forceinline__ ") + value_type(c) + " kiln_load_" + cls +
           "(const void* p, int t, long long i) {\n  switch (t) {\n";
    for (ScalarType t : kDtypes) {
      const std::string element = std::string("((const ") + storage_type(t) + "*)p)[i]";
      out += "    case " + std::to_string(int(t)) + ": return " + convert(Value{load_value(t, element), t}, c) + ";\n";
    }
    out += "  }\n  return 0;\n}\n";
    out += std::string("__device__ __forceinline__ void kiln_store_") + cls + "(void* p, int t, long long i, " +
           value_type(c) + " v) {\n  switch (t) {\n";
    for (ScalarType t : kDtypes)
      out += "    case " + std::to_string(int(t)) + ": ((" + storage_type(t) +
             "*)p)[i] = " + stored_value(t, convert(Value{"v", c}, t)) + "; return;\n";
    out += "  }\n}\n";
  }
  return out;
}

const std::string& header() {
  static const std::string text = prelude() + kTypes + conversions();
  return text;
}

std::string signature(const std::string& name, const char* args, const char* pointers) {
  return std::string("extern \"C\" __global__ void __launch_bounds__(256) ") + name + "(" + args + " p, " + pointers +
         ") {\n";
}

// The kernel of elementwise `op` loading its operands as `in` (cond: bool) and storing a `out`.
std::string elementwise_kernel(Op op, ScalarType in, ScalarType out) {
  const OpKind kind = ir::op_kind(op);
  const size_t arity = kind == OpKind::Unary ? 1 : kind == OpKind::Select ? 3 : 2;
  Node n{};
  n.op = op;
  n.dtype = out;
  std::vector<Value> a;
  std::string s = signature(std::string("kiln_per_op_") + ir::op_name(op) + "_" + class_name(in) +
                                (op == Op::Div && in == kLong && out == kDouble ? "f" : ""),
                            "kiln_per_op_args", "const void* a0, const void* a1, const void* a2, void* out");
  s += "  const long long step = (long long)gridDim.x * blockDim.x;\n"
       "  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p.count; e += step) {\n"
       "    long long i0 = p.offsets[0], i1 = p.offsets[1], i2 = p.offsets[2], r = e;\n"
       "    if (p.rank == 1) {  // no 64-bit divisions where the dims merged into one\n"
       "      i0 += e * p.strides[0][0], i1 += e * p.strides[1][0], i2 += e * p.strides[2][0];\n"
       "    } else {\n"
       "      for (int d = p.rank - 1; d >= 0; --d) {\n"
       "        const long long c = r % p.sizes[d];\n"
       "        r /= p.sizes[d];\n"
       "        i0 += c * p.strides[0][d], i1 += c * p.strides[1][d], i2 += c * p.strides[2][d];\n"
       "      }\n"
       "    }\n";
  for (size_t j = 0; j < arity; ++j) {
    const ScalarType t = kind == OpKind::Select && j == 0 ? kBool : in;
    const std::string x = "x" + std::to_string(j), index = std::to_string(j);
    s += std::string("    const ") + value_type(t) + " " + x + " = kiln_load_" + class_name(t) + "(a" + index +
         ", p.dtypes[" + index + "], i" + index + ");\n";
    a.push_back(Value{x, t});
  }
  s += std::string("    kiln_store_") + class_name(out) + "(out, p.out_dtype, e, " + lower_op(n, a) + ");\n  }\n}\n";
  return s;
}

// The compute classes (operands, result) an elementwise op has kernels for.
std::vector<std::pair<ScalarType, ScalarType>> classes(Op op) {
  const OpKind kind = ir::op_kind(op);
  if (op == Op::Cast || op == Op::Copy) return {{kLong, kLong}, {kDouble, kDouble}};
  if (kind == OpKind::Compare) return {{kLong, kBool}, {kDouble, kBool}};
  std::vector<std::pair<ScalarType, ScalarType>> c = {{kFloat, kFloat}, {kDouble, kDouble}};
  if (kind == OpKind::Select || ir::has_wrapping_form(op)) c.emplace_back(kLong, kLong);
  if (op == Op::Div) c.emplace_back(kLong, kDouble);  // integer operands divided in float64
  return c;
}

const char* combine_name(Op combine) {
  return combine == Op::Add ? "sum" : combine == Op::Mul ? "prod" : combine == Op::Max ? "max" : "min";
}

// `text` with each `$name` of `values` replaced.
std::string substitute(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [name, value] : values)
    for (size_t at; (at = text.find(name)) != std::string::npos;) text.replace(at, name.size(), value);
  return text;
}

// A block folds an output's elements: each thread a strided share, then a tree in shared memory.
constexpr const char* kReduceKernel =
    R"cuda(extern "C" __global__ void __launch_bounds__(256) $NAME(kiln_per_op_reduce_args p, const void* in, void* out) {
  __shared__ $TYPE partial[256];
  for (long long o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    long long base = p.offset, r = o;
    for (int d = p.kept_rank - 1; d >= 0; --d) {
      base += (r % p.kept_sizes[d]) * p.kept_strides[d];
      r /= p.kept_sizes[d];
    }
    $TYPE acc = $IDENTITY;
    if (p.red_rank == 1) {  // no 64-bit divisions per element
      for (long long e = threadIdx.x; e < p.inner; e += blockDim.x)
        acc = $FOLD(acc, kiln_load_$CLASS(in, p.in_dtype, base + e * p.red_strides[0]));
    } else {
      for (long long e = threadIdx.x; e < p.inner; e += blockDim.x) {
        long long at = base, q = e;
        for (int d = p.red_rank - 1; d >= 0; --d) {
          at += (q % p.red_sizes[d]) * p.red_strides[d];
          q /= p.red_sizes[d];
        }
        acc = $FOLD(acc, kiln_load_$CLASS(in, p.in_dtype, at));
      }
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) partial[threadIdx.x] = $FOLD(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) kiln_store_$CLASS(out, p.out_dtype, o, partial[0]);
    __syncthreads();  // partial is written again for the next output
  }
}
)cuda";

std::string reduce_kernel(Op reduce, ScalarType acc) {
  Node n{};
  n.op = reduce;
  n.dtype = acc;
  return substitute(kReduceKernel, {{"$NAME", std::string("kiln_per_op_reduce_") +
                                                  combine_name(ir::facts(reduce).combine) + "_" + class_name(acc)},
                                    {"$TYPE", value_type(acc)},
                                    {"$IDENTITY", reduction_identity(n)},
                                    {"$FOLD", reduction_combine(n)},
                                    {"$CLASS", class_name(acc)}});
}

std::string const_kernels() {
  std::string s;
  for (ScalarType c : {kDouble, kLong}) {
    s += signature(std::string("kiln_per_op_Const_") + class_name(c), "kiln_per_op_args",
                   "const void* a0, const void* a1, const void* a2, void* out");
    s += std::string("  const long long step = (long long)gridDim.x * blockDim.x;\n") +
         "  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p.count; e += step)\n" +
         "    kiln_store_" + class_name(c) + "(out, p.out_dtype, e, p." + (c == kLong ? "i" : "f") + ");\n}\n";
  }
  return s;
}

// The kernels of one module, without the header.
std::string kernels_of(const std::string& module) {
  if (module == "Const") return const_kernels();
  if (module == "reduce") {
    std::string s;
    for (Op reduce : {Op::Sum, Op::Prod, Op::ReduceMax, Op::ReduceMin})
      for (ScalarType acc : {kDouble, kFloat, kLong, kBool}) s += reduce_kernel(reduce, acc);
    return s;
  }
  for (int i = 0; i < ir::kOpCount; ++i) {
    const Op op = ir::all_ops()[i];
    if (module != ir::op_name(op)) continue;
    std::string s;
    for (auto [in, out] : classes(op)) s += elementwise_kernel(op, in, out);
    return s;
  }
  return "";
}

// The classes lower_op computes node `n` in (ops.cpp): its operands' and its result's.
std::pair<ScalarType, ScalarType> class_of(const Node& n) {
  const ScalarType t = n.dtype;
  const OpKind kind = ir::op_kind(n.op);
  bool integers = true;  // every operand (a Select's branches) an integer
  for (size_t j = kind == OpKind::Select ? 1 : 0; j < n.inputs.size(); ++j)
    integers = integers && is_integer(n.inputs[j].node->dtype);
  if (n.op == Op::Cast || n.op == Op::Copy) {
    const ScalarType from = n.inputs[0].node->dtype;
    return is_floating(from) ? std::pair{kDouble, kDouble} : std::pair{kLong, kLong};
  }
  if (kind == OpKind::Compare) {
    const ScalarType a = n.inputs[0].node->dtype, b = n.inputs[1].node->dtype;
    const bool exact = (a == b && !is_floating(a)) || integers;
    return {exact ? kLong : kDouble, kBool};
  }
  if (kind == OpKind::Select) {
    if (is_integer(t)) return integers ? std::pair{kLong, kLong} : std::pair{kDouble, kDouble};
    return t == kDouble || t == kBool ? std::pair{kDouble, kDouble} : std::pair{kFloat, kFloat};
  }
  if (is_integer(t) && ir::has_wrapping_form(n.op) && integers) return {kLong, kLong};
  if (n.op == Op::Div && integers) return {kLong, kDouble};
  if (t == kFloat || is_reduced_float(t)) return {kFloat, kFloat};
  return {kDouble, kDouble};
}

bool elementwise_launch(const Node& n, PerOpLaunch& l) {
  const size_t arity = n.inputs.size();
  if (arity == 0 || arity > 3) return false;
  Shape sizes = n.shape;
  std::vector<Shape> strides(arity);
  std::vector<Shape*> layouts;
  for (size_t j = 0; j < arity; ++j) {
    const ir::Operand& o = n.inputs[j];
    if (o.view.sizes != n.shape || o.view.strides.size() != n.shape.size()) return false;
    strides[j] = o.view.strides;
    layouts.push_back(&strides[j]);
  }
  per_op::coalesce(sizes, layouts);
  if (sizes.size() > size_t(kPerOpMaxRank)) return false;
  const auto [in, out] = class_of(n);
  l.module = ir::op_name(n.op);
  l.function = std::string("kiln_per_op_") + ir::op_name(n.op) + "_" + class_name(in) +
               (n.op == Op::Div && in == kLong && out == kDouble ? "f" : "");
  PerOpArgs& p = l.args;
  p.count = n.numel();
  p.rank = int32_t(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) p.sizes[d] = sizes[d];
  for (size_t j = 0; j < arity; ++j) {
    p.offsets[j] = n.inputs[j].view.offset;
    p.dtypes[j] = int32_t(n.inputs[j].node->dtype);
    for (size_t d = 0; d < sizes.size(); ++d) p.strides[j][d] = strides[j][d];
    l.inputs.push_back(n.inputs[j].node.get());
  }
  p.out_dtype = int32_t(n.dtype);
  l.work = p.count;
  return true;
}

bool reduce_launch(const Node& n, PerOpLaunch& l) {
  if (n.inputs.size() != 1) return false;
  const ir::View& v = n.inputs[0].view;
  std::vector<bool> reduced(v.sizes.size(), false);
  for (int64_t axis : n.ints) {
    if (axis < 0 || size_t(axis) >= reduced.size()) return false;
    reduced[size_t(axis)] = true;
  }
  PerOpReduceArgs& p = l.reduce_args;
  p.outputs = p.inner = 1;
  p.offset = v.offset;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 1) continue;
    int32_t& rank = reduced[d] ? p.red_rank : p.kept_rank;
    if (rank == kPerOpMaxRank) return false;
    (reduced[d] ? p.red_sizes : p.kept_sizes)[rank] = v.sizes[d];
    (reduced[d] ? p.red_strides : p.kept_strides)[rank] = v.strides[d];
    ++rank;
    (reduced[d] ? p.inner : p.outputs) *= v.sizes[d];
  }
  if (p.outputs != n.numel()) return false;
  p.in_dtype = int32_t(n.inputs[0].node->dtype);
  p.out_dtype = int32_t(n.dtype);
  l.module = "reduce";
  l.function = std::string("kiln_per_op_reduce_") + combine_name(ir::facts(n.op).combine) + "_" +
               class_name(accumulator_dtype(n));
  l.reduce = true;
  l.inputs.push_back(n.inputs[0].node.get());
  l.work = p.outputs;
  return true;
}

}  // namespace

bool per_op_launch(const Node& n, PerOpLaunch& launch) {
  launch = PerOpLaunch{};
  if (n.op == Op::Const) {
    launch.module = "Const";
    launch.function = std::string("kiln_per_op_Const_") + (is_integer(n.dtype) ? "i64" : "f64");
    launch.args.count = launch.work = n.numel();
    launch.args.f = n.scalar;
    launch.args.i = n.int_scalar;
    launch.args.out_dtype = int32_t(n.dtype);
    return true;
  }
  const OpKind kind = ir::op_kind(n.op);
  if (kind == OpKind::Reduce) return reduce_launch(n, launch);
  if (is_elementwise(kind)) return elementwise_launch(n, launch);
  return false;
}

std::vector<std::string> per_op_modules() {
  std::vector<std::string> out = {"Const", "reduce"};
  for (int i = 0; i < ir::kOpCount; ++i)
    if (is_elementwise(ir::op_kind(ir::all_ops()[i]))) out.push_back(ir::op_name(ir::all_ops()[i]));
  return out;
}

std::string per_op_source(const std::string& module) { return header() + kernels_of(module); }

const std::string& per_op_library_source() {
  static const std::string text = [] {
    std::string s = header();
    for (const std::string& m : per_op_modules()) s += kernels_of(m);
    return s;
  }();
  return text;
}

std::string per_op_library_file(int arch) {
  const std::string& s = per_op_library_source();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(s.data(), s.size())));
  return std::string("kiln-cuda-per-op-") + hex + "-sm_" + std::to_string(arch) + ".cubin";
}

std::string per_op_library_path(int arch) {
  std::vector<std::filesystem::path> folders;
#ifdef KILN_CUDA_PER_OP_BUILD_DIR
  folders.emplace_back(KILN_CUDA_PER_OP_BUILD_DIR);
#endif
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) folders.push_back(program.parent_path().parent_path() / "lib" / "kiln" / "cuda");
#ifdef KILN_CUDA_PER_OP_INSTALL_DIR
  folders.emplace_back(KILN_CUDA_PER_OP_INSTALL_DIR);
#endif
  for (const auto& folder : folders)
    if (std::filesystem::exists(folder / per_op_library_file(arch), ec))
      return (folder / per_op_library_file(arch)).string();
  return "";
}

}  // namespace kiln::codegen::cuda
