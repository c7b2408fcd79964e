// CUDA C for the library kernels that move or scatter elements (gathers, scatters, cat, view
// writes, arg-reductions, scans): one node each, every operand read through its view. The calling
// convention is in source.h (library_scalars); the meaning is the interpreter's
// (codegen/interpreter.cpp), element by element.
#include "codegen/cuda/library.h"

#include <algorithm>
#include <sstream>

#include "codegen/cuda/ops.h"
#include "codegen/cuda/source.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "tracer/view_attr.h"

namespace kiln::codegen::cuda {
namespace {

using ir::Node;
using ir::Op;

bool writes_view(Op op) { return op == Op::WriteView || op == Op::AddView; }
bool is_scatter(Op op) { return op == Op::IndexAdd || op == Op::ScatterAdd || writes_view(op); }

class LibraryEmitter {
 public:
  LibraryEmitter(const Node& node, const std::string& name) : n(node), name(name) {
    out_shape = ViewParams{"out_", n.shape.size()};
    for (size_t i = 0; i < n.inputs.size(); ++i)
      inputs.push_back(ViewParams{"in" + std::to_string(i) + "_", n.inputs[i].view.sizes.size()});
    if (writes_view(n.op)) target = ViewParams{"target_", ir::unpack_view(n.ints).sizes.size()};
  }

  std::string emit() {
    if (is_scatter(n.op)) {
      begin(name + "_init");
      // The output starts as the base (input 0), read through its view at the output's coordinates.
      loop(out_shape, [&](const std::vector<std::string>& c) {
        line("out[i] = " + stored(load(0, view_index(inputs[0], c))) + ";");
      });
      end();
    }
    begin(name);
    KILN_CHECK(has_library_source(n), "cuda: no library source for ", ir::op_name(n.op));
    if (ir::op_kind(n.op) == ir::OpKind::ArgReduce)
      emit_arg_reduce();
    else if (n.op == Op::CumMaxIndex || n.op == Op::CumMinIndex)
      emit_scan_positions();
    else if (n.op == Op::SearchSorted)
      emit_search_sorted();
    else if (n.op == Op::IndexSelect || n.op == Op::Gather)
      emit_gather();
    else if (n.op == Op::IndexAdd || n.op == Op::ScatterAdd)
      emit_scatter_add();
    else if (n.op == Op::Cat)
      emit_cat();
    else
      emit_view_write();
    end();
    return out.str();
  }

 private:
  void line(const std::string& text) { out << indent << text << '\n'; }

  void begin(const std::string& function) {
    out << library_signature(n, function);
    indent = "  ";
  }
  void end() { out << "}\n"; }

  // A grid-stride loop over the elements of `shape` (its sizes), flat index `i`, body(coords);
  // with `fixed` (a dim), over its other dims only, that dim's coordinate 0 (rows along it).
  template <typename Body>
  void loop(const ViewParams& shape, Body&& body, size_t fixed = size_t(-1)) {
    std::string total = "1";
    for (size_t d = 0; d < shape.rank; ++d)
      if (d != fixed) total += " * " + shape.size(d);
    line("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, total = " + total +
         "; i < total; i += (long long)blockDim.x * gridDim.x) {");
    indent += "  ";
    std::vector<std::string> c(shape.rank, "0");
    if (shape.rank > 0) {
      line("long long rest = i;");
      for (size_t d = shape.rank; d-- > 0;) {
        if (d == fixed) continue;
        c[d] = "c" + std::to_string(d);
        line("const long long " + c[d] + " = rest % " + shape.size(d) + ";");
        if (d > 0) line("rest /= " + shape.size(d) + ";");
      }
    }
    body(c);
    indent.resize(indent.size() - 2);
    line("}");
  }

  static std::string view_index(const ViewParams& v, const std::vector<std::string>& c) {
    std::string index = v.offset();
    for (size_t d = 0; d < v.rank; ++d) index += " + " + c[d] + " * " + v.stride(d);
    return index;
  }
  // The flat index of coordinates `c` in the contiguous output.
  std::string out_index(const std::vector<std::string>& c) const {
    std::string index = "0";
    for (size_t d = 0; d < out_shape.rank; ++d) index = "(" + index + ") * " + out_shape.size(d) + " + " + c[d];
    return index;
  }

  // Input `i`'s element at `index`, as the output's value type.
  Value load(size_t i, const std::string& index) const {
    const ScalarType t = n.inputs[i].node->dtype;
    return Value{load_value(t, "in" + std::to_string(i) + "[" + index + "]"), t};
  }
  std::string stored(const Value& v) const { return stored_value(n.dtype, convert(v, n.dtype)); }
  // The index operand (input 1) at `index` as int64, and a guard that skips the element when it
  // is out of range: the interpreter raises there, a kernel cannot (such an element of a gather
  // is 0, of a scatter is not added).
  std::string index_value(const std::string& index, const std::string& size) {
    line("const long long j = " + convert(load(1, index), kLong) + ";");
    return "j >= 0 && j < " + size;
  }

  int64_t dim() const { return n.ints[0]; }
  std::vector<std::string> with_dim(std::vector<std::string> c, const std::string& at, size_t d = size_t(-1)) const {
    c[d == size_t(-1) ? size_t(dim()) : d] = at;
    return c;
  }

  // out[c] = self[c with c[dim] = index[...]]: IndexSelect takes the index at c[dim], Gather at c.
  void emit_gather() {
    loop(out_shape, [&](const std::vector<std::string>& c) {
      const std::string at = n.op == Op::IndexSelect
                                 ? inputs[1].offset() + " + " + c[size_t(dim())] + " * " + inputs[1].stride(0)
                                 : view_index(inputs[1], c);
      const std::string ok = index_value(at, inputs[0].size(size_t(dim())));
      line("out[i] = " + ok + " ? " + stored(load(0, view_index(inputs[0], with_dim(c, "j")))) + " : " +
           stored(Value{"0", kLong}) + ";");
    });
  }

  // Adds `value` into out[index]. Float and double atomics make the sum's rounding depend on the
  // order the threads arrive in where several sources hit one element (the interpreter adds in
  // index order, in float64): such results vary in their last bits from run to run.
  void accumulate(const std::string& index, const Value& value) {
    const std::string v = convert(value, n.dtype);
    switch (n.dtype) {
      case kFloat:
      case kDouble: line("atomicAdd(out + " + index + ", " + v + ");"); break;
      case kLong:
        line("atomicAdd(reinterpret_cast<unsigned long long*>(out + " + index + "), (unsigned long long)" + v + ");");
        break;
      case kBool: line("if (" + v + ") out[" + index + "] = 1;"); break;  // every writer writes 1
      case kByte:
      case kChar:
      case kShort:
      case kInt:
      case kHalf:
      case kBFloat16:
        throw Error(detail::concat("cuda: no atomic add for dtype ", dtype_name(n.dtype)));  // has_library_source
    }
  }

  // IndexAdd walks src (the index at c[dim]); ScatterAdd walks the index (src at the same c).
  void emit_scatter_add() {
    const bool per_row = n.op == Op::IndexAdd;
    loop(per_row ? inputs[2] : inputs[1], [&](const std::vector<std::string>& c) {
      const std::string at = per_row ? inputs[1].offset() + " + " + c[size_t(dim())] + " * " + inputs[1].stride(0)
                                     : view_index(inputs[1], c);
      line("if (!(" + index_value(at, out_shape.size(size_t(dim()))) + ")) continue;");
      accumulate(out_index(with_dim(c, "j")), load(2, view_index(inputs[2], c)));
    });
  }

  // Each input in turn, a grid-stride loop over its elements into its window of the output.
  void emit_cat() {
    line("long long start = 0;");
    for (size_t i = 0; i < inputs.size(); ++i) {
      loop(inputs[i], [&](const std::vector<std::string>& c) {
        line("out[" + out_index(with_dim(c, c[size_t(dim())] + " + start")) +
             "] = " + stored(load(i, view_index(inputs[i], c))) + ";");
      });
      line("start += " + inputs[i].size(size_t(dim())) + ";");
    }
  }

  // The value's elements, in row-major order, into the target view of the output (after the
  // base's copy). WriteView's targets do not overlap (they are slices); AddView's may, and
  // overlapping positions accumulate.
  void emit_view_write() {
    const ViewParams& value = inputs[1];
    loop(target, [&](const std::vector<std::string>& c) {
      std::string at;
      if (value.rank == target.rank) {
        at = view_index(value, c);
      } else {  // another shape with as many elements: the value's coordinates from the flat index
        line("long long value_rest = i, value_at = " + value.offset() + ";");
        for (size_t d = value.rank; d-- > 0;) {
          line("value_at += (value_rest % " + value.size(d) + ") * " + value.stride(d) + ";");
          line("value_rest /= " + value.size(d) + ";");
        }
        at = "value_at";
      }
      const std::string dst = view_index(target, c);
      if (n.op == Op::AddView)
        accumulate(dst, load(1, at));
      else
        line("out[" + dst + "] = " + stored(load(1, at)) + ";");
    });
  }

  // One thread per output element walks its line along the axis in order, in float64 as the
  // interpreter: the first NaN wins, and ties keep the first index.
  void emit_arg_reduce() {
    const size_t axis = size_t(dim());
    const bool want_max = n.op == Op::ArgMax;
    loop(out_shape, [&](const std::vector<std::string>& c) {
      line("const long long first = " + view_index(inputs[0], with_dim(c, "0")) + ";");
      line("double best = 0;");
      line("long long best_at = 0;");
      line("for (long long p = 0; p < " + inputs[0].size(axis) + "; ++p) {");
      line("  const double v = " + convert(load(0, "first + p * " + inputs[0].stride(axis)), kDouble) + ";");
      line(std::string("  if (p == 0 || (!isnan(best) && (isnan(v) || v ") + (want_max ? ">" : "<") + " best))) {");
      line("    best = v;");
      line("    best_at = p;");
      line("  }");
      line("}");
      line("out[i] = best_at;");
    });
  }

  // A thread per row along the dim walks it in order, as codegen/scan_sort.cpp's routine: the
  // running maximum's (minimum's) position, NaN taking it and ties moving it later.
  void emit_scan_positions() {
    const size_t axis = size_t(dim());
    const ScalarType t = n.inputs[0].node->dtype;
    const bool floating = t == kFloat || t == kDouble;
    std::string out_step = "1";
    for (size_t d = axis + 1; d < out_shape.rank; ++d) out_step += " * " + out_shape.size(d);
    loop(
        out_shape,
        [&](const std::vector<std::string>& c) {
          line("const long long first = " + view_index(inputs[0], c) + ", out_first = " + out_index(c) + ";");
          const std::string x = "first + p * " + inputs[0].stride(axis), at = "out_first + p * (" + out_step + ")";
          line(std::string("auto best = ") + "(" + value_type(t) + ")" + load(0, "first").code + ";");
          line("long long best_at = 0;");
          line("for (long long p = 0; p < " + inputs[0].size(axis) + "; ++p) {");
          line(std::string("  const ") + value_type(t) + " v = " + load(0, x).code + ";");
          const std::string better = n.op == Op::CumMaxIndex ? "v >= best" : "v <= best";
          line("  if (" + (floating ? "isnan(v) || (!isnan(best) && " + better + ")" : better) + ") {");
          line("    best = v;");
          line("    best_at = p;");
          line("  }");
          line("  out[" + at + "] = best_at;");
          line("}");
        },
        axis);
  }

  // Each value's insertion point in its row of the sorted sequence (input 0, expanded to the
  // values' leading dims by the frontend), by codegen/scan_sort.cpp's binary search on plain IEEE
  // comparisons.
  void emit_search_sorted() {
    const size_t last = out_shape.rank - 1;
    const ViewParams &sequence = inputs[0], &values = inputs[1];
    loop(out_shape, [&](const std::vector<std::string>& c) {
      line(std::string("const ") + value_type(n.inputs[1].node->dtype) + " x = " + load(1, view_index(values, c)).code +
           ";");
      line("const long long row = " + view_index(sequence, with_dim(c, "0", last)) + ";");
      line("long long start = 0, end = " + sequence.size(last) + ";");
      line("while (start < end) {");
      line("  const long long mid = start + ((end - start) >> 1);");
      line(std::string("  const ") + value_type(n.inputs[0].node->dtype) +
           " m = " + load(0, "row + mid * " + sequence.stride(last)).code + ";");
      line(std::string("  if (") + (n.ints[0] != 0 ? "!(m > x)" : "!(m >= x)") + ") start = mid + 1;");
      line("  else end = mid;");
      line("}");
      line("out[i] = start;");
    });
  }

  const Node& n;
  const std::string name;
  ViewParams out_shape, target;
  std::vector<ViewParams> inputs;
  std::ostringstream out;
  std::string indent;
};

}  // namespace

bool has_library_source(const Node& n) {
  // Adding into the output takes atomics, which the narrow dtypes lack here: those run on the host.
  const bool adds = n.op == Op::IndexAdd || n.op == Op::ScatterAdd || n.op == Op::AddView;
  if (adds && n.dtype != kBool && n.dtype != kLong && n.dtype != kFloat && n.dtype != kDouble) return false;
  switch (ir::op_kind(n.op)) {
    case ir::OpKind::ArgReduce:
    case ir::OpKind::Gather:
    case ir::OpKind::Cat:
    case ir::OpKind::WriteView: return true;
    case ir::OpKind::Matmul: return false;  // matmul and bmm are cuBLAS calls, not generated
    case ir::OpKind::Scan: return true;     // value scans a block per long row (library_rows.cpp), or a thread per row
    case ir::OpKind::Sort: {                // the frontend widens other dtypes (frontend/scan_sort.cpp)
      const ScalarType t = n.inputs.back().node->dtype;
      return t == kBool || t == kLong || t == kFloat || t == kDouble;
    }
    case ir::OpKind::Leaf:
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Compare:
    case ir::OpKind::Select:
    case ir::OpKind::Reduce: return false;  // fused into Pointwise and Reduction kernels
  }
  return false;
}

std::string library_key(const Node& n) {
  std::string key =
      std::string("L|") + ir::op_name(n.op) + "." + dtype_name(n.dtype) + ":" + std::to_string(n.shape.size());
  if (!writes_view(n.op)) key += "@" + std::to_string(n.ints.at(0));
  for (const auto& in : n.inputs)
    key += std::string("|") + dtype_name(in.node->dtype) + ":" + std::to_string(in.view.sizes.size());
  if (writes_view(n.op)) key += "|target:" + std::to_string(ir::unpack_view(n.ints).sizes.size());
  return key;
}

std::vector<int64_t> library_scalars(const fusion::Kernel& k) {
  std::vector<int64_t> scalars;
  const std::vector<ir::View> views = argument_views(*k.library_node);
  for (size_t v = 0; v < views.size(); ++v) {
    if (v > 0) scalars.push_back(views[v].offset);
    scalars.insert(scalars.end(), views[v].sizes.begin(), views[v].sizes.end());
    if (v > 0) scalars.insert(scalars.end(), views[v].strides.begin(), views[v].strides.end());
  }
  // A sort's attributes (direction, k, ...) are arguments: one kernel serves every k of a topk.
  if (library_workspace(*k.library_node))
    scalars.insert(scalars.end(), k.library_node->ints.begin(), k.library_node->ints.end());
  return scalars;
}

int64_t library_work(const fusion::Kernel& k) {
  int64_t work = 1;
  for (const ir::View& v : argument_views(*k.library_node)) work = std::max(work, numel_of(v.sizes));
  return work;
}

std::vector<ir::View> argument_views(const Node& n) {
  std::vector<ir::View> views{ir::View{n.shape, {}, 0}};
  for (const auto& in : n.inputs) views.push_back(in.view);
  if (writes_view(n.op)) views.push_back(ir::unpack_view(n.ints));
  return views;
}

bool library_workspace(const Node& n) { return ir::op_kind(n.op) == ir::OpKind::Sort && n.op != Op::SearchSorted; }

std::string library_signature(const Node& n, const std::string& function) {
  std::vector<std::string> params;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    params.push_back(std::string("const ") + storage_type(n.inputs[i].node->dtype) + "* __restrict__ in" +
                     std::to_string(i));
  std::vector<ViewParams> views{ViewParams{"out_", n.shape.size()}};
  for (size_t i = 0; i < n.inputs.size(); ++i)
    views.push_back(ViewParams{"in" + std::to_string(i) + "_", n.inputs[i].view.sizes.size()});
  if (writes_view(n.op)) views.push_back(ViewParams{"target_", ir::unpack_view(n.ints).sizes.size()});
  for (size_t v = 0; v < views.size(); ++v) {
    if (v > 0) params.push_back("long long " + views[v].offset());
    for (size_t d = 0; d < views[v].rank; ++d) params.push_back("long long " + views[v].size(d));
    if (v > 0)
      for (size_t d = 0; d < views[v].rank; ++d) params.push_back("long long " + views[v].stride(d));
  }
  if (library_workspace(n))
    for (size_t i = 0; i < n.ints.size(); ++i) params.push_back("long long attr" + std::to_string(i));
  params.push_back(std::string(storage_type(n.dtype)) + "* __restrict__ out");
  if (library_workspace(n)) params.push_back("unsigned long long* __restrict__ work");
  std::string text = std::string("extern \"C\" __global__ void __launch_bounds__(") + std::to_string(kBlockThreads) +
                     ") " + function + "(";
  for (size_t i = 0; i < params.size(); ++i) text += (i ? ",\n    " : "") + params[i];
  return text + ") {\n";
}

std::string library_source(const Node& n, const std::string& name) {
  if (library_workspace(n)) return sort_rows_source(n, name);
  if (n.op == Op::CumSum || n.op == Op::CumProd || n.op == Op::LogCumSumExp) return scan_rows_source(n, name);
  return LibraryEmitter(n, name).emit();
}

bool library_has_init(const Node& n) { return is_scatter(n.op); }

}  // namespace kiln::codegen::cuda
