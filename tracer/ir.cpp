#include "tracer/ir.h"

#include <sstream>

namespace kiln::ir {

const OpFacts& facts(Op op) {
  static const OpFacts table[] = {
#define X(name, kind, cost, traits, combine) {#name, OpKind::kind, cost, traits, Op::combine},
#include "tracer/ops.def"
#undef X
  };
  return table[int(op)];
}

const Op* all_ops() {
  static const Op ops[] = {
#define X(name, kind, cost, traits, combine) Op::name,
#include "tracer/ops.def"
#undef X
  };
  return ops;
}

static std::string short_id(const void* p) {
  std::ostringstream os;
  os << "%" << std::hex << ((reinterpret_cast<uintptr_t>(p) >> 4) & 0xffff);
  return os.str();
}

std::string to_string(const Node& n) {
  std::ostringstream os;
  os << short_id(&n) << " = " << op_name(n.op) << "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const auto& in = n.inputs[i];
    os << (i ? ", " : "") << short_id(in.node.get()) << in.view.sizes;
  }
  if (!n.ints.empty()) os << (n.inputs.empty() ? "" : ", ") << "ints=" << n.ints;
  if (n.op == Op::Const) is_integer(n.dtype) ? os << n.int_scalar : os << n.scalar;
  os << ") : " << dtype_name(n.dtype) << n.shape;
  return os.str();
}

}  // namespace kiln::ir
