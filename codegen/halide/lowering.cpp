#include "codegen/halide/lowering.h"

#include "codegen/halide/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {

using namespace Halide;
using ir::Op;

Lowering::Lowering(const fusion::Kernel& kernel) : k(kernel) {
  strides.resize(k.reads.size());
  for_each_argument(k, [&](const KernelArgument& a) {
    const std::string read = std::to_string(a.read), dim = std::to_string(a.dim), node = std::to_string(a.node);
    switch (a.kind) {
      case KernelArgument::Kind::Input:
        inputs.emplace_back(storage_type(k.reads[size_t(a.read)].node->dtype), 1, "in" + read);
        arguments.push_back(inputs.back());
        break;
      case KernelArgument::Kind::Extent:
        extents.emplace_back("extent" + dim);
        arguments.push_back(extents.back());
        break;
      case KernelArgument::Kind::Offset:
        offsets.emplace_back("offset" + read);
        arguments.push_back(offsets.back());
        break;
      case KernelArgument::Kind::Stride: {
        Param<int32_t> p("stride" + read + "_" + dim);
        strides[size_t(a.read)].emplace(size_t(a.dim), p);
        arguments.push_back(p);
        break;
      }
      case KernelArgument::Kind::Int64Const: {  // exact: a float64 is not above 2^53
        Param<int64_t> p("const" + node);
        consts[a.node] = p;
        arguments.push_back(p);
        break;
      }
      case KernelArgument::Kind::Float64Const: {
        Param<double> p("const" + node);
        consts[a.node] = p;
        arguments.push_back(p);
        break;
      }
      case KernelArgument::Kind::Output: break;  // Halide passes the pipeline's outputs after its arguments
    }
  });
  for (auto& in : inputs) {
    // Inputs are read through computed indices: tell Halide their one dimension starts at 0.
    in.dim(0).set_min(0);
    in.dim(0).set_stride(1);
  }
}

Expr Lowering::load(int r, const std::vector<Expr>& coords) {
  Expr index = offsets[r];
  for (size_t d = 0; d < coords.size(); ++d) {
    const char c = stride_class(k.reads[r].strides[d]);
    if (c == '1') index = index + coords[d];
    if (c == '2') index = index + coords[d] * 2;
    if (c == 's') index = index + coords[d] * strides[r].at(d);
  }
  return to_value(inputs[r](index), k.reads[r].node->dtype);
}

Expr Lowering::value(int i, Context& c) {
  if (k.nodes[i].per_row && c.rows) {
    if (ir::op_kind(k.nodes[i].node->op) == ir::OpKind::Reduce) return value(i, *c.rows);  // a Func's already
    auto it = row_values.find(i);
    if (it == row_values.end()) {
      Func f("row_value" + std::to_string(i));
      f(row_vars) = value(i, *c.rows);
      it = row_values.emplace(i, f).first;
    }
    return it->second(std::vector<Expr>(row_vars.begin(), row_vars.end()));
  }
  if (c.memo.empty()) c.memo.resize(k.nodes.size());
  if (c.memo[i].defined()) return c.memo[i];
  const ir::Node& n = *k.nodes[i].node;
  Expr e;
  const Stored* stored = nullptr;
  if (c.stored)
    if (auto it = c.stored->find(i); it != c.stored->end()) stored = &it->second;
  if (stored) {
    FuncRef ref = stored->f(std::vector<Expr>(c.coords.rbegin(), c.coords.rend()));  // innermost first
    e = stored->index < 0 ? Expr(ref) : Expr(ref[stored->index]);
  } else if (n.op == Op::Const) {
    e = convert(consts.at(i), n.dtype);
  } else if (ir::op_kind(n.op) == ir::OpKind::Reduce) {
    KILN_CHECK(c.reduced.count(i), "halide: a reduction read outside its epilogue");
    e = round_to_dtype(c.reduced.at(i), n.dtype);
  } else {
    std::vector<Expr> args;
    for (int a : k.nodes[i].args)
      args.push_back(fusion::is_read(a) ? load(fusion::read_index(a), c.coords) : value(a, c));
    e = round_to_dtype(lower_op(n, args), n.dtype);
  }
  return c.memo[i] = e;
}

std::vector<Var> make_vars(size_t rank) {
  std::vector<Var> vars;
  for (size_t i = 0; i < rank; ++i) vars.emplace_back("x" + std::to_string(i));
  return vars;
}

void define(Func& f, const std::vector<Var>& lhs, const std::vector<Expr>& values) {
  if (values.size() == 1)
    f(lhs) = values[0];
  else
    f(lhs) = Tuple(values);
}

Expr tuple_element(const Func& f, const std::vector<Expr>& at, size_t j) {
  return f.outputs() == 1 ? Expr(f(at)) : Expr(f(at)[int(j)]);
}

}  // namespace kiln::codegen::halide
