#include "codegen/halide/lowering.h"

#include "codegen/halide/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {

using namespace Halide;
using ir::Op;

Lowering::Lowering(const fusion::Kernel& kernel) : k(kernel) {
  const size_t rank = k.domain.size();
  for (size_t r = 0; r < k.reads.size(); ++r)
    inputs.emplace_back(storage_type(k.reads[r].node->dtype), 1, "in" + std::to_string(r));
  for (size_t d = 0; d < rank; ++d) extents.emplace_back("extent" + std::to_string(d));
  strides.resize(k.reads.size());
  for (size_t r = 0; r < k.reads.size(); ++r) {
    offsets.emplace_back("offset" + std::to_string(r));
    for (size_t d = 0; d < rank; ++d)
      if (stride_class(k.reads[r].strides[d]) == 's')
        strides[r].emplace(d, Param<int32_t>("stride" + std::to_string(r) + "_" + std::to_string(d)));
  }
  std::vector<Argument> const_arguments;
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const ir::Node& n = *k.nodes[i].node;
    if (n.op != Op::Const) continue;
    const std::string name = "const" + std::to_string(i);
    if (n.dtype == kLong) {  // exact: a float64 is not above 2^53
      Param<int64_t> p(name);
      consts[int(i)] = p;
      const_arguments.push_back(p);
    } else {
      Param<double> p(name);
      consts[int(i)] = p;
      const_arguments.push_back(p);
    }
  }
  // The order of arguments/arguments.h.
  for (auto& in : inputs) arguments.push_back(in);
  for (auto& e : extents) arguments.push_back(e);
  for (size_t r = 0; r < k.reads.size(); ++r) {
    arguments.push_back(offsets[r]);
    for (auto& [d, p] : strides[r]) arguments.push_back(p);
  }
  arguments.insert(arguments.end(), const_arguments.begin(), const_arguments.end());
  for (size_t i = 0; i < k.reads.size(); ++i) {
    // Inputs are read through computed indices: tell Halide their one dimension starts at 0.
    inputs[i].dim(0).set_min(0);
    inputs[i].dim(0).set_stride(1);
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
    e = c.reduced.at(i);
  } else {
    std::vector<Expr> args;
    for (int a : k.nodes[i].args)
      args.push_back(fusion::is_read(a) ? load(fusion::read_index(a), c.coords) : value(a, c));
    e = lower_op(n, args);
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
