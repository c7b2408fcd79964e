// The bodies of ir::scalar_op and ir::wrapping_op (tracer/op_scalar.h), inline: a loop that calls
// them with an op known where it is compiled folds the switch away and vectorizes, which is how
// codegen/per_op_kernels.cpp makes a compiled kernel of every elementwise op without a second
// copy of its meaning. The text between the two "CUDA text" lines below is CUDA C as well:
// codegen/cuda/ops.cpp compiles it into every kernel (CMake embeds it), so that one scalar_value
// serves the interpreter, constant folding, the per-op kernels and the CUDA backend. It uses only
// what ops.cpp's prelude gives NVRTC: Op, std::'s math functions, special::, not_elementwise and
// scalar_detail::lgamma.
#pragma once
#include <algorithm>
#include <cmath>

#include "tracer/op_scalar.h"
#include "tracer/special_functions.h"

#define KILN_SCALAR_FUNCTION [[gnu::always_inline]] inline

namespace kiln::ir {

// Throws kiln::Error: `op` is not `what` ("an elementwise op").
[[noreturn]] void not_elementwise(Op op, const char* what);

namespace scalar_detail {
// lgamma_r: libm's lgamma writes the global signgam.
inline double lgamma(double a) {
  int sign;
  return lgamma_r(a, &sign);
}
}  // namespace scalar_detail

}  // namespace kiln::ir

// CUDA text begins
namespace kiln {
namespace ir {

namespace scalar_detail {
template <class T>
KILN_SCALAR_FUNCTION T sign(T x) {  // keeps -0, 0 and NaN
  return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
}
template <class T>
KILN_SCALAR_FUNCTION T nan_or(T a, T b, T value) {
  return a != a || b != b ? a + b : value;  // a + b: NaN
}
// A bitwise op's operand (bool or integer values): its int64 (NaN and out of range: 0).
template <class T>
KILN_SCALAR_FUNCTION long long bits_of(T a) {
  return a > T(-0x1p63) && a < T(0x1p63) ? (long long)a : 0;
}
// Shifts by a count outside [0, 63] are defined (ops.def): 0, or -1 for a negative number shifted right.
KILN_SCALAR_FUNCTION long long shift_left(long long a, long long count) {
  return count < 0 || count > 63 ? 0 : (long long)((unsigned long long)a << count);
}
KILN_SCALAR_FUNCTION long long shift_right(long long a, long long count) {
  return count < 0 || count > 63 ? (a < 0 ? -1 : 0) : a >> count;
}
}  // namespace scalar_detail

// op(a) or op(a, b) computed in T, float or double (b unused by a one-operand op); with
// `integer_operands`, Div truncates as C's int64 division (by 0: 0). Comparisons give 0 or 1.
template <class T>
KILN_SCALAR_FUNCTION T scalar_value(Op op, T a, T b, bool integer_operands) {
  using namespace scalar_detail;
  switch (op) {
    case Op::Copy:
    case Op::Cast: return a;
    case Op::Neg: return -a;
    case Op::Exp: return std::exp(a);
    case Op::Log: return std::log(a);
    case Op::Log1p: return std::log1p(a);
    case Op::Sin: return std::sin(a);
    case Op::Cos: return std::cos(a);
    case Op::Sqrt: return std::sqrt(a);
    case Op::Recip: return T(1) / a;
    case Op::Abs: return std::fabs(a);
    case Op::Sign: return sign(a);
    case Op::Tanh: return std::tanh(a);
    case Op::Erf: return std::erf(a);
    case Op::Not: return a == T(0) ? T(1) : T(0);
    case Op::Floor: return std::floor(a);
    case Op::Ceil: return std::ceil(a);
    case Op::Round: return std::nearbyint(a);  // half to even in the default rounding mode
    case Op::Trunc: return std::trunc(a);
    case Op::Atan: return std::atan(a);
    case Op::Asin: return std::asin(a);
    case Op::Acos: return std::acos(a);
    case Op::Sinh: return std::sinh(a);
    case Op::Cosh: return std::cosh(a);
    case Op::Asinh: return std::asinh(a);
    case Op::Acosh: return std::acosh(a);
    case Op::Atanh: return std::atanh(a);
    case Op::Expm1: return std::expm1(a);
    case Op::Exp2: return std::exp2(a);
    case Op::Erfc: return std::erfc(a);
    // tracer/special_functions.h's, in float64 (a float32 rounded once), as every backend computes them.
    case Op::Erfinv: return T(special::erfinv<special::DoubleMath>(double(a)));
    case Op::Lgamma: return T(scalar_detail::lgamma(double(a)));
    case Op::Digamma: return T(special::digamma<special::DoubleMath>(double(a)));
    case Op::Trigamma: return T(special::trigamma<special::DoubleMath>(double(a)));
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div:
      if (integer_operands) return b == T(0) ? T(0) : std::trunc(a / b);  // C's, as int64 kernels
      return a / b;
    case Op::Pow: return std::pow(a, b);
    case Op::Max: return nan_or(a, b, a > b ? a : b);  // NaN wins, as in PyTorch
    case Op::Min: return nan_or(a, b, a < b ? a : b);
    case Op::Fmod: return std::fmod(a, b);
    case Op::Atan2: return std::atan2(a, b);
    case Op::Hypot: return std::hypot(a, b);
    case Op::Copysign: return std::copysign(a, b);
    case Op::BitAnd: return T(bits_of(a) & bits_of(b));
    case Op::BitOr: return T(bits_of(a) | bits_of(b));
    case Op::BitXor: return T(bits_of(a) ^ bits_of(b));
    case Op::ShiftLeft: return T(shift_left(bits_of(a), bits_of(b)));
    case Op::ShiftRight: return T(shift_right(bits_of(a), bits_of(b)));
    case Op::BitNot: return T(~bits_of(a));
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::Where:
    case KILN_NOT_ELEMENTWISE_OPS: break;
  }
  not_elementwise(op, "an elementwise op");
  return a;  // (on a GPU, where not_elementwise cannot throw)
}

// op(a) or op(a, b) on int64, wrapping on overflow (b unused by a one-operand op): the ops with
// an int64 form (ops.def's kInt64); the others are not_elementwise's error. CUDA's int64 code calls
// it too (codegen/cuda/ops.cpp).
KILN_SCALAR_FUNCTION long long apply_wrapping_op(Op op, long long a, long long b) {
  using namespace scalar_detail;
  const unsigned long long x = (unsigned long long)a, y = (unsigned long long)b;
  switch (op) {
    case Op::Copy:
    case Op::Cast: return a;
    case Op::Neg: return (long long)(0 - x);
    case Op::Abs: return a < 0 ? (long long)(0 - x) : a;
    case Op::Sign: return (a > 0) - (a < 0);
    case Op::Add: return (long long)(x + y);
    case Op::Sub: return (long long)(x - y);
    case Op::Mul: return (long long)(x * y);
    case Op::Div: return b == 0 ? 0 : b == -1 ? (long long)(0 - x) : a / b;  // by zero 0; INT64_MIN / -1 wraps
    case Op::Max: return a > b ? a : b;
    case Op::Min: return a < b ? a : b;
    case Op::Fmod: return b == 0 || b == -1 ? 0 : a % b;  // INT64_MIN % -1 would trap
    case Op::BitAnd: return a & b;
    case Op::BitOr: return a | b;
    case Op::BitXor: return a ^ b;
    case Op::ShiftLeft: return shift_left(a, b);
    case Op::ShiftRight: return shift_right(a, b);
    case Op::BitNot: return ~a;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    // No int64 form: computed in float64 (scalar_value).
    case Op::Exp:
    case Op::Log:
    case Op::Log1p:
    case Op::Sin:
    case Op::Cos:
    case Op::Sqrt:
    case Op::Recip:
    case Op::Tanh:
    case Op::Erf:
    case Op::Not:
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc:
    case Op::Atan:
    case Op::Asin:
    case Op::Acos:
    case Op::Sinh:
    case Op::Cosh:
    case Op::Asinh:
    case Op::Acosh:
    case Op::Atanh:
    case Op::Expm1:
    case Op::Exp2:
    case Op::Erfc:
    case Op::Erfinv:
    case Op::Lgamma:
    case Op::Digamma:
    case Op::Trigamma:
    case Op::Pow:
    case Op::Atan2:
    case Op::Hypot:
    case Op::Copysign:
    case Op::Where:
    case KILN_NOT_ELEMENTWISE_OPS: break;
  }
  not_elementwise(op, "an int64 op");
  return a;  // (on a GPU, where not_elementwise cannot throw)
}

}  // namespace ir
}  // namespace kiln
// CUDA text ends

namespace kiln::ir {

KILN_SCALAR_FUNCTION double apply_scalar_op(Op op, double a, double b, ScalarType operands) {
  return scalar_value(op, a, b, is_integer(operands));
}

}  // namespace kiln::ir
