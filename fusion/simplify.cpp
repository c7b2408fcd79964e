// Algebraic simplification and constant folding on the plan: an op whose other operand is the
// identity constant reads its operand directly, and an elementwise op on constants becomes a
// constant. Only rewrites exact in IEEE arithmetic are made (x * 0 is not 0 when x is NaN).
#include <cmath>

#include "fusion/passes.h"
#include "tracer/op_scalar.h"

namespace kiln::fusion {
namespace {

using ir::Op;

bool is_const(const ir::Operand& o, double value) { return o.node->op == Op::Const && o.node->scalar == value; }

// Reads `o` as a consumer of a node of `shape` would: only when `o` is its producer's whole
// output in order, so that the consumer's view of the node applies to the producer unchanged.
bool passes_through(const ir::Operand& o, const ir::Node& n) {
  return o.node->dtype == n.dtype && o.node->shape == n.shape && o.view.offset == 0 && o.view.sizes == n.shape &&
         o.view.strides == contiguous_strides(n.shape);
}

// The operand `n` equals, if it is an identity op.
const ir::Operand* identity_operand(const ir::Node& n) {
  if (n.inputs.size() != 2) return nullptr;
  const auto &a = n.inputs[0], &b = n.inputs[1];
  switch (n.op) {
    case Op::Add:
      if (is_const(b, 0) && passes_through(a, n)) return &a;
      if (is_const(a, 0) && passes_through(b, n)) return &b;
      break;
    case Op::Mul:
      if (is_const(b, 1) && passes_through(a, n)) return &a;
      if (is_const(a, 1) && passes_through(b, n)) return &b;
      break;
    case Op::Sub:
    case Op::Div:
      if (is_const(b, n.op == Op::Sub ? 0 : 1) && passes_through(a, n)) return &a;
      break;
    default: break;
  }
  return nullptr;
}

// The value of an elementwise op on constant operands, if it folds exactly as the backends
// compute it: an op correctly rounded in IEEE arithmetic (ops.def's kExact), on floating operands,
// in float64 from the constants as a float32 kernel holds them, then rounded to float32 (a double
// rounding that is exact for these ops).
bool fold(const ir::Node& n, double& out) {
  const ir::OpKind kind = ir::op_kind(n.op);
  if (kind != ir::OpKind::Unary && kind != ir::OpKind::Binary) return false;
  if (!ir::facts(n.op).has(ir::kExact) || !is_floating(n.dtype)) return false;
  // A Copy is left alone: it materializes a value where the frontend asked for one, and the
  // partitioner plans around it (folding it gave LayerNorm's backward three passes per row).
  if (n.op == Op::Copy) return false;
  for (const auto& in : n.inputs)
    if (in.node->op != Op::Const || in.node->dtype != n.dtype) return false;
  double a = n.inputs[0].node->scalar, b = n.inputs.size() > 1 ? n.inputs[1].node->scalar : 0;
  // a kernel's constants as it holds them, and its result as it stores it
  a = round_to_float_dtype(a, n.dtype), b = round_to_float_dtype(b, n.dtype);
  out = round_to_float_dtype(ir::scalar_op(n.op, a, b, n.dtype), n.dtype);
  return true;
}

// A reduction over axes of extent 1 only reads one element per output: it is the elementwise
// identity (a Cast where the dtype changes, as sum's int64 of an int32). Backends then never see a
// reduction kernel without a reduced dim.
bool reduces_nothing(const ir::Node& n) {
  if (ir::op_kind(n.op) != ir::OpKind::Reduce) return false;
  for (int64_t axis : n.ints)
    if (n.inputs[0].view.sizes[size_t(axis)] != 1) return false;
  return true;
}

}  // namespace

void simplify(Plan& plan) {
  // An identity op is stamped `redirected`, with the index of the operand its readers now read.
  const uint64_t redirected = begin_pass();
  bool changed = false;
  for (auto& step : plan.steps) {
    ir::Node& n = *step.node;
    for (auto& in : n.inputs)  // the operand read instead is canonical already (dependency order)
      if (in.node->pass == redirected) {
        ir::NodePtr same = in.node->inputs[size_t(in.node->pass_value)].node;
        plan.dropped.push_back(std::move(in.node));
        in.node = std::move(same);
      }
    double value;
    if (fold(n, value)) {  // the node itself becomes the constant: its readers need no change
      n.op = Op::Const;
      n.scalar = value;
      for (auto& in : n.inputs) plan.dropped.push_back(std::move(in.node));
      n.inputs.clear();
      changed = true;
      continue;
    }
    if (reduces_nothing(n)) {
      n.op = n.dtype == n.inputs[0].node->dtype ? Op::Copy : Op::Cast;
      n.ints.clear();
      changed = true;
    }
    if (step.is_root) continue;
    if (const ir::Operand* same = identity_operand(n)) {
      n.pass = redirected;
      n.pass_value = same - n.inputs.data();
      changed = true;
    }
  }
  if (changed) drop_dead_steps(plan);
}

void drop_dead_steps(Plan& plan) {
  // Backwards, a kept step stamps what it reads. Readers come after what they read, so a step's
  // stamp is final when the walk reaches it, and the steps are then compacted in place.
  const uint64_t read = begin_pass();
  auto kept = [&](const Step& s) { return s.is_root || s.node->pass == read; };
  for (auto it = plan.steps.rbegin(); it != plan.steps.rend(); ++it)
    if (kept(*it))
      for (const auto& in : it->node->inputs) in.node->pass = read;
  size_t out = 0;
  for (auto& step : plan.steps) {
    if (!kept(step)) continue;
    if (&plan.steps[out++] != &step) plan.steps[out - 1] = std::move(step);
  }
  plan.steps.resize(out);
}

}  // namespace kiln::fusion
