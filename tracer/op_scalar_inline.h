// The bodies of ir::scalar_op and ir::wrapping_op (tracer/op_scalar.h), inline: a loop that calls
// them with an op known where it is compiled folds the switch away and vectorizes, which is how
// codegen/per_op_kernels.cpp makes a compiled kernel of every elementwise op without a second
// copy of its meaning.
#pragma once
#include <algorithm>
#include <cmath>

#include "tracer/op_scalar.h"
#include "tracer/special_functions.h"

namespace kiln::ir {

// Throws kiln::Error: `op` is not `what` ("an elementwise op").
[[noreturn]] void not_elementwise(Op op, const char* what);

namespace scalar_detail {
inline double sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }  // keeps -0, 0 and NaN
inline double nan_or(double a, double b, double value) { return std::isnan(a) || std::isnan(b) ? NAN : value; }
// A bitwise op's operand in float64 (bool or integer values): its int64 (NaN and out of range: 0).
inline int64_t bits_of(double a) { return std::fabs(a) < 0x1p63 ? int64_t(a) : 0; }
// Shifts by a count outside [0, 63] are defined (ops.def): 0, or -1 for a negative number shifted right.
inline int64_t shift_left(int64_t a, int64_t count) {
  return count < 0 || count > 63 ? 0 : int64_t(uint64_t(a) << count);
}
inline int64_t shift_right(int64_t a, int64_t count) { return count < 0 || count > 63 ? (a < 0 ? -1 : 0) : a >> count; }
}  // namespace scalar_detail

[[gnu::always_inline]] inline double apply_scalar_op(Op op, double a, double b, ScalarType operands) {
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
    case Op::Recip: return 1.0 / a;
    case Op::Abs: return std::fabs(a);
    case Op::Sign: return scalar_detail::sign(a);
    case Op::Tanh: return std::tanh(a);
    case Op::Erf: return std::erf(a);
    case Op::Not: return a == 0 ? 1.0 : 0.0;
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
    case Op::Erfinv: return special::erfinv<special::DoubleMath>(a);
    case Op::Lgamma: {
      int sign;  // lgamma_r: libm's lgamma writes the global signgam
      return lgamma_r(a, &sign);
    }
    case Op::Digamma: return special::digamma<special::DoubleMath>(a);
    case Op::Trigamma: return special::trigamma<special::DoubleMath>(a);
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div:
      if (is_integer(operands)) return b == 0 ? 0 : std::trunc(a / b);  // C's, as int64 kernels
      return a / b;
    case Op::Pow: return std::pow(a, b);
    case Op::Max: return scalar_detail::nan_or(a, b, std::max(a, b));
    case Op::Min: return scalar_detail::nan_or(a, b, std::min(a, b));
    case Op::Fmod: return std::fmod(a, b);
    case Op::Atan2: return std::atan2(a, b);
    case Op::Hypot: return std::hypot(a, b);
    case Op::BitAnd: return double(scalar_detail::bits_of(a) & scalar_detail::bits_of(b));
    case Op::BitOr: return double(scalar_detail::bits_of(a) | scalar_detail::bits_of(b));
    case Op::BitXor: return double(scalar_detail::bits_of(a) ^ scalar_detail::bits_of(b));
    case Op::ShiftLeft: return double(scalar_detail::shift_left(scalar_detail::bits_of(a), scalar_detail::bits_of(b)));
    case Op::ShiftRight:
      return double(scalar_detail::shift_right(scalar_detail::bits_of(a), scalar_detail::bits_of(b)));
    case Op::BitNot: return double(~scalar_detail::bits_of(a));
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
}

// For an op with a wrapping form only (wrapping_op checks).
[[gnu::always_inline]] inline int64_t apply_wrapping_op(Op op, int64_t a, int64_t b) {
  const uint64_t x = uint64_t(a), y = uint64_t(b);
  switch (op) {
    case Op::Neg: return int64_t(0 - x);
    case Op::Abs: return a < 0 ? int64_t(0 - x) : a;
    case Op::Sign: return (a > 0) - (a < 0);
    case Op::Add: return int64_t(x + y);
    case Op::Sub: return int64_t(x - y);
    case Op::Mul: return int64_t(x * y);
    case Op::Div: return b == 0 ? 0 : b == -1 ? int64_t(0 - x) : a / b;  // by zero 0; INT64_MIN / -1 wraps
    case Op::Max: return std::max(a, b);
    case Op::Min: return std::min(a, b);
    case Op::Fmod: return b == 0 || b == -1 ? 0 : a % b;  // INT64_MIN % -1 would trap
    case Op::BitAnd: return a & b;
    case Op::BitOr: return a | b;
    case Op::BitXor: return a ^ b;
    case Op::ShiftLeft: return scalar_detail::shift_left(a, b);
    case Op::ShiftRight: return scalar_detail::shift_right(a, b);
    case Op::BitNot: return ~a;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    default: return a;  // Copy and Cast (has_wrapping_form lists the rest)
  }
}

}  // namespace kiln::ir
