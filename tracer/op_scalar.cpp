#include "tracer/op_scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/error.h"
#include "tracer/op_scalar_inline.h"

namespace kiln::ir {

void not_elementwise(Op op, const char* what) { throw Error(detail::concat("ir: ", op_name(op), " is not ", what)); }

double scalar_op(Op op, double a, double b, ScalarType operands) { return apply_scalar_op(op, a, b, operands); }

bool has_wrapping_form(Op op) { return facts(op).has(kInt64); }

int64_t wrapping_op(Op op, int64_t a, int64_t b) {
  if (!has_wrapping_form(op)) not_elementwise(op, "an int64 op");
  return apply_wrapping_op(op, a, b);
}

double reduction_identity(Op reduce) {
  switch (facts(reduce).combine) {
    case Op::Add: return 0;
    case Op::Mul: return 1;
    case Op::Max: return -std::numeric_limits<double>::infinity();
    case Op::Min: return std::numeric_limits<double>::infinity();
    default: not_elementwise(reduce, "a reduction");
  }
}

int64_t wrapping_reduction_identity(Op reduce) {
  switch (facts(reduce).combine) {
    case Op::Add: return 0;
    case Op::Mul: return 1;
    case Op::Max: return std::numeric_limits<int64_t>::min();
    case Op::Min: return std::numeric_limits<int64_t>::max();
    default: not_elementwise(reduce, "a reduction");
  }
}

}  // namespace kiln::ir
