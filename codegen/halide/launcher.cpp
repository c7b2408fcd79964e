#include "codegen/halide/launcher.h"

#include <HalideRuntime.h>

#include <chrono>

#include "codegen/arguments.h"
#include "runtime/log.h"
#include "runtime/stats.h"

namespace kiln::codegen::halide {
namespace {

using fusion::Kernel;

halide_type_t storage_type(ScalarType t) {
  switch (t) {
    case kBool: return {halide_type_uint, 8, 1};
    case kLong: return {halide_type_int, 64, 1};
    case kFloat: return {halide_type_float, 32, 1};
    case kDouble: return {halide_type_float, 64, 1};
    case kByte: return {halide_type_uint, 8, 1};
    case kChar: return {halide_type_int, 8, 1};
    case kShort: return {halide_type_int, 16, 1};
    case kInt: return {halide_type_int, 32, 1};
    case kHalf: return {halide_type_float, 16, 1};
    case kBFloat16: return {halide_type_uint, 16, 1};  // its bits (ops.cpp's storage_type)
  }
  return {halide_type_float, 32, 1};
}

// A contiguous buffer over `data` with the given extents (outermost first), min 0 in every dim:
// kernels are compiled assuming so (lowering.cpp constrains the inputs' mins and inner strides,
// schedule.cpp two-output row kernels' output mins and extents; the target drops the checks): a cropped or
// offset buffer would give wrong results, not an error.
struct HalideBuffer {
  halide_buffer_t buf{};
  halide_dimension_t dims[kMaxDims]{};
  HalideBuffer(void* data, ScalarType t, const Shape& extents) {
    buf.host = static_cast<uint8_t*>(data);
    buf.type = storage_type(t);
    buf.dimensions = int(extents.size());
    buf.dim = dims;
    int32_t stride = 1;
    for (size_t i = 0; i < extents.size(); ++i) {  // Halide's dim 0 is the innermost
      dims[i] = {0, int32_t(extents[extents.size() - 1 - i]), stride, 0};
      stride *= int32_t(extents[extents.size() - 1 - i]);
    }
  }
};

}  // namespace

void launch(const Kernel& k, KernelFn fn) {
  std::vector<HalideBuffer> buffers;
  buffers.reserve(k.reads.size() + k.outputs.size());
  std::vector<int32_t> ints;
  ints.reserve(k.domain.size() + k.reads.size() * (1 + k.domain.size()));
  union ConstArgument {  // a Const's value as arguments.h passes it
    double floating;
    int64_t integer;
  };
  std::vector<ConstArgument> consts;
  consts.reserve(k.nodes.size());
  std::vector<void*> argv;  // into buffers, ints and consts: reserved above, they never move
  Shape row_extents;        // a Reduction's per-row outputs: the kept dims
  for (size_t d = 0; d < k.domain.size(); ++d)
    if (k.kind == Kernel::Kind::Reduction && !k.reduced[d]) row_extents.push_back(k.domain[d]);
  for_each_argument(k, [&](const KernelArgument& a) {
    using Kind = KernelArgument::Kind;
    switch (a.kind) {
      case Kind::Input: {
        const fusion::Read& r = k.reads[size_t(a.read)];
        KILN_CHECK(r.node->result, "halide: kernel reads ", ir::op_name(r.node->op), " before it is computed (",
                   k.key(), ")");
        argv.push_back(&buffers.emplace_back(r.node->result->data(), r.node->dtype, Shape{r.node->numel()}).buf);
        break;
      }
      case Kind::Extent: argv.push_back(&ints.emplace_back(int32_t(k.domain[size_t(a.dim)]))); break;
      case Kind::Offset: argv.push_back(&ints.emplace_back(int32_t(k.reads[size_t(a.read)].offset))); break;
      case Kind::Stride:
        argv.push_back(&ints.emplace_back(int32_t(k.reads[size_t(a.read)].strides[size_t(a.dim)])));
        break;
      case Kind::Int64Const: {
        ConstArgument& c = consts.emplace_back();
        c.integer = k.nodes[size_t(a.node)].node->int_scalar;
        argv.push_back(&c);
        break;
      }
      case Kind::Float64Const: {
        ConstArgument& c = consts.emplace_back();
        c.floating = k.nodes[size_t(a.node)].node->scalar;
        argv.push_back(&c);
        break;
      }
      case Kind::Output: {
        ir::Node& n = *k.nodes[size_t(a.node)].node;
        n.result = make_buffer(n.numel() * element_size(n.dtype));
        const Shape& extents = k.nodes[size_t(a.node)].per_row ? row_extents : k.domain;
        argv.push_back(&buffers.emplace_back(n.result->data(), n.dtype, extents).buf);
        break;
      }
    }
  });
  if (numel_of(k.domain) == 0 && k.kind == Kernel::Kind::Pointwise) return;
  const bool trace = log().should_log(spdlog::level::trace);
  const auto start = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const int rc = fn(argv.data());
  if (trace)
    log().trace("launch {:.1f} us {} over {}",
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count(), k.key(),
                detail::concat(k.domain));
  KILN_CHECK(rc == 0, "halide: kernel failed with code ", rc, " (", k.key(), ")");
  stats_add(&Stats::kernel_launches, 1);
}

}  // namespace kiln::codegen::halide
