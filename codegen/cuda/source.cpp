#include "codegen/cuda/source.h"

#include <algorithm>
#include <cstdio>

#include "codegen/cuda/emitter.h"
#include "codegen/cuda/library.h"
#include "codegen/cuda/ops.h"
#include "runtime/error.h"
#include "runtime/hash.h"

namespace kiln::codegen::cuda {
namespace {

using fusion::Kernel;
using Scope = Emitter::Scope;

// Largest index a 32-bit kernel computes: int32's range less room for a grid-stride loop's last
// step past the end (grid * block is at most 2^28, launch_dims).
constexpr int64_t kIndex32Limit = (int64_t(1) << 31) - (int64_t(1) << 28) - 1;

std::string function_name(const std::string& key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(key.data(), key.size())));
  return std::string("kiln_cuda_") + hex;
}

// One grid-stride loop over the domain, every output written at the element's flat index.
void emit_pointwise_loop(Emitter& e, const std::string& indent, const std::string& first) {
  const Kernel& k = e.k;
  std::vector<size_t> dims(k.domain.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = d;
  e.line(indent, "for (idx_t i = " + first + "; i < total; i += (idx_t)blockDim.x * gridDim.x) {");
  const std::string in = indent + "  ";
  e.split_index(in, "i", dims);
  Scope s{"", in, {}, nullptr, {}};
  for (size_t d : dims) s.coords.push_back(e.coord(d));
  for (size_t j = 0; j < k.outputs.size(); ++j) e.store(in, j, "i", k.outputs[j], s);
  e.line(indent, "}");
}

bool contiguous_read(const fusion::Read& r) { return fusion::stride_class(r.strides[0]) == '1'; }

// Elements per vector access of a 1-D pointwise kernel (its reads with stride 1 and its outputs
// each move 16 bytes or less at once: 4 elements, 2 of 8-byte types), or 1 where it is not one.
// Decided by what the key holds (rank, stride classes, dtypes).
int vector_lanes(const Kernel& k) {
  constexpr size_t kMostNodes = 48;  // beyond, four copies of the body cost registers and compile time
  if (k.kind != Kernel::Kind::Pointwise || k.domain.size() != 1 || k.tiny_inner() || k.nodes.size() > kMostNodes)
    return 1;
  size_t widest = 0;
  for (const auto& r : k.reads)
    if (contiguous_read(r)) widest = std::max(widest, element_size(r.node->dtype));
  for (int o : k.outputs) widest = std::max(widest, element_size(k.nodes[size_t(o)].node->dtype));
  return widest == 8 ? 2 : 4;
}

// A 1-D pointwise kernel with vector loads and stores (kiln_vector: ld.global.v4 and the like)
// where every contiguous read's first element and every output are aligned to a vector, which the
// kernel checks (offsets are arguments): then each thread takes `lanes` elements at a time, and
// the last total % lanes one by one; else the plain loop.
void emit_vector_pointwise(Emitter& e, int lanes) {
  const Kernel& k = e.k;
  const std::string v = std::to_string(lanes);
  auto vector_type = [&](ScalarType t) { return std::string("kiln_vector<") + storage_type(t) + ", " + v + ">"; };
  std::string aligned;
  for (size_t r = 0; r < k.reads.size(); ++r)
    if (contiguous_read(k.reads[r]))
      aligned +=
          "o" + std::to_string(r) + " % " + v + " == 0 && kiln_aligned(in" + std::to_string(r) + ", " + v + ") && ";
  for (size_t j = 0; j < k.outputs.size(); ++j)
    aligned += (j ? " && " : "") + std::string("kiln_aligned(out") + std::to_string(j) + ", " + v + ")";
  e.line("  ", "const idx_t total = " + e.extent(0) + ";");
  e.line("  ", "const idx_t first = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;");
  e.line("  ", "if (!(" + aligned + ")) {");
  emit_pointwise_loop(e, "    ", "first");
  e.line("    ", "return;");
  e.line("  ", "}");
  e.line("  ", "const idx_t vectors = total / " + v + ";");
  e.line("  ", "for (idx_t q = first; q < vectors; q += (idx_t)blockDim.x * gridDim.x) {");
  const std::string in = "    ";
  for (size_t r = 0; r < k.reads.size(); ++r)
    if (contiguous_read(k.reads[r])) {
      const std::string n = std::to_string(r);
      e.line(in, "const " + vector_type(k.reads[r].node->dtype) + " vr" + n + " = *reinterpret_cast<const " +
                     vector_type(k.reads[r].node->dtype) + "*>(in" + n + " + o" + n + " + q * " + v + ");");
    }
  for (size_t j = 0; j < k.outputs.size(); ++j)
    e.line(in, vector_type(k.nodes[size_t(k.outputs[j])].node->dtype) + " vout" + std::to_string(j) + ";");
  for (int lane = 0; lane < lanes; ++lane) {
    const std::string l = std::to_string(lane);
    Scope s{"l" + l + "_", in, {"(q * " + v + " + " + l + ")"}, nullptr, {}};
    for (size_t r = 0; r < k.reads.size(); ++r)
      if (contiguous_read(k.reads[r])) {
        const std::string name = s.prefix + "r" + std::to_string(r);
        const ScalarType t = k.reads[r].node->dtype;
        e.line(in, std::string("const ") + value_type(t) + " " + name + " = " +
                       load_value(t, "vr" + std::to_string(r) + ".v[" + l + "]") + ";");
        s.names[~int(r)] = name;
      }
    for (size_t j = 0; j < k.outputs.size(); ++j) {
      const int o = k.outputs[j];
      e.line(in, "vout" + std::to_string(j) + ".v[" + l +
                     "] = " + stored_value(k.nodes[size_t(o)].node->dtype, e.value(o, s)) + ";");
    }
  }
  for (size_t j = 0; j < k.outputs.size(); ++j)
    e.line(in, "*reinterpret_cast<" + vector_type(k.nodes[size_t(k.outputs[j])].node->dtype) + "*>(out" +
                   std::to_string(j) + " + q * " + v + ") = vout" + std::to_string(j) + ";");
  e.line("  ", "}");
  emit_pointwise_loop(e, "  ", "vectors * " + v + " + first");
}

void emit_pointwise(Emitter& e) {
  const int lanes = vector_lanes(e.k);
  if (lanes > 1) return emit_vector_pointwise(e, lanes);
  std::vector<size_t> dims(e.k.domain.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = d;
  e.line("  ", "const idx_t total = " + e.product(dims) + ";");
  emit_pointwise_loop(e, "  ", "(idx_t)blockIdx.x * blockDim.x + threadIdx.x");
}

// The reductions of a Reduction kernel: phases (a row kernel's later reductions read earlier ones'
// results), each a fold per thread, then across the block where a block shares a row.
class ReductionEmitter {
 public:
  explicit ReductionEmitter(Emitter& emitter) : e(emitter), k(emitter.k), layout(layout_of(emitter.k)) {
    for (size_t d = 0; d < k.domain.size(); ++d) (k.reduced[d] ? reduced_dims : kept_dims).push_back(d);
    phase = k.phases();
    for (int r : k.reduces) phases = std::max(phases, phase[size_t(r)]);
    for (int o : k.outputs) (k.nodes[size_t(o)].per_row ? row_outputs : element_outputs).push_back(o);
    // Per-element outputs are written at row * row_length + j: the rows must be the trailing dims.
    if (!element_outputs.empty())
      for (size_t d = 0; d + reduced_dims.size() < k.domain.size(); ++d)
        KILN_CHECK(!k.reduced[d], "cuda: a row kernel reduces trailing dims only (", k.key(), ")");
  }

  void emit() {
    e.line("  ", "const idx_t rows = " + e.product(kept_dims) + ";");
    e.line("  ", "const idx_t row_length = " + e.product(reduced_dims) + ";");
    if (layout != Layout::ThreadPerRow) {
      e.line("  ", "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
      for (int r : k.reduces)
        e.line("  ", std::string("__shared__ ") + acc_type(r) + " shared" + std::to_string(r) + "[32];");
    }
    if (layout == Layout::SplitWhole) return emit_split_whole();
    const bool block = layout == Layout::BlockPerRow;
    e.line("  ", block ? "for (idx_t row = blockIdx.x; row < rows; row += gridDim.x) {"
                       : "for (idx_t row = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows; "
                         "row += (idx_t)blockDim.x * gridDim.x) {");
    const std::string in = "    ";
    e.split_index(in, "row", kept_dims);
    Scope rows = row_scope(in);
    emit_row_values(rows, 0);
    const std::string first = block ? "threadIdx.x" : "0", step = block ? "blockDim.x" : "1";
    for (int p = 1; p <= phases; ++p) {
      const std::vector<int> reducing = phase_reductions(p);
      for (int r : reducing) e.line(in, acc_type(r) + " " + acc(r) + " = " + reduction_identity(node(r)) + ";");
      e.line(in, "for (idx_t j = " + first + "; j < row_length; j += " + step + ") {");
      Scope elements = element_scope(in + "  ", "j", &rows);
      for (int r : reducing) fold(r, elements);
      e.line(in, "}");
      if (block) fold_block(in, reducing);
      for (int r : reducing) define_reduced(in, r);
      emit_row_values(rows, p);
    }
    if (!element_outputs.empty()) {
      e.line(in, "for (idx_t j = " + first + "; j < row_length; j += " + step + ") {");
      Scope elements = element_scope(in + "  ", "j", &rows);
      for (size_t j = 0; j < element_outputs.size(); ++j)
        e.store(in + "  ", j, "row * row_length + j", element_outputs[j], elements);
      e.line(in, "}");
    }
    if (!row_outputs.empty()) {
      for (int o : row_outputs) e.value(o, rows);  // computed by every thread: they are cheap
      const std::string at = block ? in + "  " : in;
      if (block) e.line(in, "if (threadIdx.x == 0) {");
      for (size_t j = 0; j < row_outputs.size(); ++j)
        e.store(at, element_outputs.size() + j, "row", row_outputs[j], rows);
      if (block) e.line(in, "}");
    }
    e.line("  ", "}");
  }

 private:
  // A whole-tensor fold: every block folds a slice into the workspace (8 bytes per block and
  // reduction); the block that finishes last combines those partial results in block order (so
  // the result is the same run to run) and writes the outputs.
  void emit_split_whole() {
    const std::string in = "  ";
    for (int r : k.reduces) e.line(in, acc_type(r) + " " + acc(r) + " = " + reduction_identity(node(r)) + ";");
    e.line(in,
           "for (idx_t j = (idx_t)blockIdx.x * blockDim.x + threadIdx.x; j < row_length; j += (idx_t)blockDim.x * "
           "gridDim.x) {");
    Scope rows = row_scope(in);
    Scope elements = element_scope(in + "  ", "j", &rows);
    for (int r : k.reduces) fold(r, elements);
    e.line(in, "}");
    fold_block(in, k.reduces);
    e.line(in, "__shared__ bool last_block;");
    e.line(in, "if (threadIdx.x == 0) {");
    for (size_t j = 0; j < k.reduces.size(); ++j) {
      const int r = k.reduces[j];
      e.line(in + "  ", "reinterpret_cast<" + acc_type(r) + "*>(workspace + " + std::to_string(j) +
                            " * gridDim.x)[blockIdx.x] = " + acc(r) + ";");
    }
    e.line(in + "  ", "__threadfence();");
    e.line(in + "  ", "last_block = atomicAdd(block_count, 1u) == gridDim.x - 1;");
    e.line(in, "}");
    e.line(in, "__syncthreads();");
    e.line(in, "if (!last_block) return;");
    e.line(in, "__threadfence();");
    for (size_t j = 0; j < k.reduces.size(); ++j) {
      const int r = k.reduces[j];
      e.line(in, acc(r) + " = " + reduction_identity(node(r)) + ";");
      e.line(in, "for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x)");
      e.line(in + "  ", acc(r) + " = " + reduction_combine(node(r)) + "(" + acc(r) + ", reinterpret_cast<volatile " +
                            acc_type(r) + "*>(workspace + " + std::to_string(j) + " * gridDim.x)[b]);");
    }
    fold_block(in, k.reduces);
    for (int r : k.reduces) define_reduced(in, r);
    e.line(in, "if (threadIdx.x == 0) {");
    rows.indent = in + "  ";
    for (size_t j = 0; j < row_outputs.size(); ++j)
      e.store(in + "  ", element_outputs.size() + j, "0", row_outputs[j], rows);
    e.line(in + "  ", "*block_count = 0;");
    e.line(in, "}");
  }

  const ir::Node& node(int i) const { return *k.nodes[size_t(i)].node; }
  std::string acc(int r) const { return "acc" + std::to_string(r); }
  std::string acc_type(int r) const { return value_type(accumulator_dtype(node(r))); }

  std::vector<int> phase_reductions(int p) const {
    std::vector<int> out;
    for (int r : k.reduces)
      if (phase[size_t(r)] == p) out.push_back(r);
    return out;
  }

  // A row's values: its kept coordinates, reduced dims at 0.
  Scope row_scope(const std::string& indent) const {
    Scope s{"row_", indent, std::vector<std::string>(k.domain.size(), "0"), nullptr, {}};
    for (size_t d : kept_dims) s.coords[d] = e.coord(d);
    return s;
  }
  // An element of the row: the reduced coordinates from the row's flat index `flat`.
  Scope element_scope(const std::string& indent, const std::string& flat, Scope* rows) {
    e.split_index(indent, flat, reduced_dims);
    Scope s{"", indent, std::vector<std::string>(k.domain.size(), "0"), rows, {}};
    for (size_t d = 0; d < k.domain.size(); ++d) s.coords[d] = e.coord(d);
    return s;
  }

  // The per-row values whose reductions are all folded by phase p, computed where every element
  // loop after it sees them.
  void emit_row_values(Scope& rows, int p) {
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (k.nodes[i].per_row && phase[i] == p && ir::op_kind(k.nodes[i].node->op) != ir::OpKind::Reduce)
        e.value(int(i), rows);
  }

  void fold(int r, Scope& elements) {
    const std::string x = e.operand(k.nodes[size_t(r)].args[0], elements, node(r).dtype);
    const std::string widened = convert(Value{x, node(r).dtype}, accumulator_dtype(node(r)));
    e.line(elements.indent, acc(r) + " = " + reduction_combine(node(r)) + "(" + acc(r) + ", " + widened + ");");
  }

  // Combines the threads' accumulators across the block (warp shuffles, then the warps' results
  // through shared memory), leaving the result in every thread's accumulator.
  void fold_block(const std::string& in, const std::vector<int>& reducing) {
    auto fold_warp = [&](const std::string& at) {
      e.line(at, "for (int offset = 16; offset > 0; offset >>= 1) {");
      for (int r : reducing)
        e.line(at + "  ", acc(r) + " = " + reduction_combine(node(r)) + "(" + acc(r) + ", kiln_shuffle_down(" + acc(r) +
                              ", offset));");
      e.line(at, "}");
    };
    fold_warp(in);
    for (int r : reducing) e.line(in, "if (lane == 0) shared" + std::to_string(r) + "[warp] = " + acc(r) + ";");
    e.line(in, "__syncthreads();");
    e.line(in, "if (warp == 0) {");
    for (int r : reducing)
      e.line(in + "  ", acc(r) + " = lane < (int)(blockDim.x >> 5) ? shared" + std::to_string(r) +
                            "[lane] : " + reduction_identity(node(r)) + ";");
    fold_warp(in + "  ");
    for (int r : reducing) e.line(in + "  ", "if (lane == 0) shared" + std::to_string(r) + "[0] = " + acc(r) + ";");
    e.line(in, "}");
    e.line(in, "__syncthreads();");
    for (int r : reducing) e.line(in, acc(r) + " = shared" + std::to_string(r) + "[0];");
    e.line(in, "__syncthreads();  // the shared slots are written again by the next fold");
  }

  void define_reduced(const std::string& in, int r) {
    const std::string name = "reduced" + std::to_string(r);
    e.line(in, std::string("const ") + value_type(node(r).dtype) + " " + name + " = " +
                   convert(Value{acc(r), accumulator_dtype(node(r))}, node(r).dtype) + ";");
    e.reduced[r] = name;
  }

  Emitter& e;
  const Kernel& k;
  const Layout layout;
  std::vector<size_t> kept_dims, reduced_dims;
  std::vector<int> phase;
  int phases = 0;
  std::vector<int> element_outputs, row_outputs;
};

}  // namespace

// library.cpp
std::string library_source(const ir::Node& n, const std::string& name);
bool library_has_init(const ir::Node& n);
int64_t library_work(const Kernel& k);

bool has_cuda_source(const Kernel& k) { return k.kind != Kernel::Kind::Library || has_library_source(*k.library_node); }

bool fits_int32_indices(const Kernel& k) {
  if (k.kind == Kernel::Kind::Library) return false;  // library kernels index in 64 bits
  if (numel_of(k.domain) > kIndex32Limit) return false;
  for (const auto& r : k.reads) {
    int64_t reach = r.offset;
    for (size_t d = 0; d < r.strides.size(); ++d)
      reach += std::max<int64_t>(k.domain[d] - 1, 0) * (r.strides[d] < 0 ? -r.strides[d] : r.strides[d]);
    if (reach > kIndex32Limit) return false;
  }
  return true;
}

std::string cuda_key(const Kernel& k, bool index32) {
  return (k.kind == Kernel::Kind::Library ? library_key(*k.library_node) : k.key()) + (index32 ? "|idx32" : "|idx64");
}

Layout layout_of(const Kernel& k) {
  if (k.kind != Kernel::Kind::Reduction) return Layout::Pointwise;
  const bool whole = std::all_of(k.reduced.begin(), k.reduced.end(), [](bool r) { return r; });
  if (whole && !k.row_kernel()) return Layout::SplitWhole;
  if (k.narrow_rows() || (!k.reduced.empty() && !k.reduced.back())) return Layout::ThreadPerRow;
  return Layout::BlockPerRow;
}

KernelSource kernel_source(const Kernel& k, bool index32) {
  KILN_CHECK(has_cuda_source(k), "cuda: a library kernel has no CUDA source");
  KernelSource s;
  s.key = cuda_key(k, index32);
  s.name = function_name(s.key);
  s.layout = layout_of(k);
  s.index32 = index32;
  if (k.kind == Kernel::Kind::Library) {
    const ir::Node& n = *k.library_node;
    KILN_CHECK(!index32, "cuda: library kernels index in 64 bits (", s.key, ")");
    if (library_has_init(n)) s.init_name = s.name + "_init";
    s.source = prelude() + "\n" + kKernelMarker + "// " + s.key + "\n" + library_source(n, s.name);
    return s;
  }
  Emitter e(k, index32);
  e.begin(s.name, s.layout == Layout::SplitWhole);
  if (s.layout == Layout::Pointwise)
    emit_pointwise(e);
  else
    ReductionEmitter(e).emit();
  e.end();
  s.source = prelude() + "\n" + kKernelMarker + e.out.str();
  return s;
}

LaunchDims launch_dims(const Kernel& k, int sm_count) {
  LaunchDims dims;
  const int64_t sms = std::max(sm_count, 1);
  auto blocks_for = [](int64_t work, int64_t cap) { return uint32_t(std::max<int64_t>(1, std::min(work, cap))); };
  if (k.kind == Kernel::Kind::Library) {
    if (rows_launch_dims(*k.library_node, sm_count, dims)) return dims;
    dims.grid = blocks_for((library_work(k) + kBlockThreads - 1) / kBlockThreads, sms * 8);
    return dims;
  }
  int64_t rows = 1, row_length = 1;
  for (size_t d = 0; d < k.domain.size(); ++d)
    (k.kind == Kernel::Kind::Reduction && k.reduced[d] ? row_length : rows) *= k.domain[d];
  switch (layout_of(k)) {
    case Layout::Pointwise:
    case Layout::ThreadPerRow: dims.grid = blocks_for((rows + kBlockThreads - 1) / kBlockThreads, sms * 8); break;
    case Layout::BlockPerRow:
      // A warp per short row: the source reads its block's size, so any multiple of 32 serves.
      dims.block = row_length <= 128 ? 32 : row_length <= 1024 ? 128 : kBlockThreads;
      dims.grid = blocks_for(rows, sms * 32);
      break;
    case Layout::SplitWhole:
      dims.grid =
          blocks_for((row_length + 8 * kBlockThreads - 1) / (8 * kBlockThreads), std::min<int64_t>(sms * 4, 1024));
      dims.workspace_bytes = uint64_t(dims.grid) * 8 * k.reduces.size();
      break;
  }
  return dims;
}

}  // namespace kiln::codegen::cuda
