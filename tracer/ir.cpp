#include "tracer/ir.h"

#include <sstream>

namespace kiln::ir {

const char* op_name(Op op) {
  static const char* names[] = {
#define X(name, kind) #name,
#include "tracer/ops.def"
#undef X
  };
  return names[int(op)];
}

OpKind op_kind(Op op) {
  static const OpKind kinds[] = {
#define X(name, kind) OpKind::kind,
#include "tracer/ops.def"
#undef X
  };
  return kinds[int(op)];
}

// A float32 transcendental function is a few dozen vector operations in a compiled kernel.
int op_cost(Op op) {
  switch (op) {
    case Op::Exp:
    case Op::Log:
    case Op::Log1p:
    case Op::Erf:
    case Op::Tanh:
    case Op::Sin:
    case Op::Cos:
    case Op::Pow: return 20;
    default: return 1;
  }
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
  if (n.op == Op::Const) n.dtype == kLong ? os << n.int_scalar : os << n.scalar;
  os << ") : " << dtype_name(n.dtype) << n.shape;
  return os.str();
}

}  // namespace kiln::ir
