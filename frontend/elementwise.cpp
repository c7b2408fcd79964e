// Elementwise ops: type promotion and broadcasting here, one primitive (or a short composite of
// primitives) each. Composite ops get their gradient from the primitives they are made of.
#include <cmath>
#include <string_view>

#include "frontend/derivatives.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"

namespace kiln {

using detail::named;
using detail::primitive;
using ir::Op;

// --- promotion and broadcasting ---

// PyTorch's rule: a higher category (bool < integer < floating) wins; within one category a
// tensor with dimensions decides over a zero-dimensional one (libtorch's combine_categories).
ScalarType result_type(const Tensor& a, const Tensor& b) {
  if ((a.dim() > 0) == (b.dim() > 0)) return promote(a.dtype(), b.dtype());
  const Tensor& dimensioned = a.dim() > 0 ? a : b;
  const Tensor& zero_dim = a.dim() > 0 ? b : a;
  return dtype_category(zero_dim.dtype()) > dtype_category(dimensioned.dtype()) ? zero_dim.dtype()
                                                                                : dimensioned.dtype();
}
// A number is weaker still: it decides only where its category is higher, as int64 or the default
// float dtype.
ScalarType result_type(const Tensor& a, const Scalar& b) {
  const ScalarType t = a.dtype();
  if (dtype_category(b.type()) <= dtype_category(t)) return t;
  return b.isFloatingPoint() ? get_default_dtype_as_scalartype() : promote(t, b.type());
}
ScalarType result_type(const Scalar& a, const Tensor& b) { return result_type(b, a); }
ScalarType result_type(const Scalar& a, const Scalar& b) {
  if (a.isFloatingPoint() || b.isFloatingPoint()) return get_default_dtype_as_scalartype();
  return promote(a.type(), b.type());
}

namespace {

Shape broadcast(IntArrayRef a, IntArrayRef b, const char* op) {
  const int64_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t da = i - (rank - int64_t(a.size())), db = i - (rank - int64_t(b.size()));
    const int64_t sa = da >= 0 ? a[da] : 1, sb = db >= 0 ? b[db] : 1;
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, op, ": the size of tensor a (", sa,
               ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i, " (shapes ", a.vec(),
               " and ", b.vec(), ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}
Shape broadcast(const Tensor& a, const Tensor& b, const char* op) { return broadcast(a.sizes(), b.sizes(), op); }

// A number as a zero-dim tensor of the type it takes next to `like` (PyTorch's wrapped numbers:
// within the tensor's category the tensor's dtype, int8 + 1000 staying int8; a float next to an
// integer tensor is the default dtype).
const Tensor& wrap_scalar(const Scalar& s, const Tensor& like) { return detail::constant(s, result_type(like, s)); }

Tensor float_input(const Tensor& x) { return x.is_floating_point() ? x : x.to(kFloat); }

// `x` as dtype `t`: x itself where it has it (no copy, see detail::Tensors), else the cast, which
// `cast` keeps alive.
const Tensor& as_dtype(const Tensor& x, ScalarType t, Tensor& cast) { return x.dtype() == t ? x : (cast = x.to(t)); }

Tensor unary(Op op, const Tensor& x) { return primitive(op, {x}, x.sizes(), x.dtype()); }

// What an integer or bool input to a table op gives (frontend/elementwise_ops.def).
enum class Dtypes { Float, Same, Unchanged };
Tensor unary_table_op(Op op, const Tensor& x, Dtypes dtypes) {
  if (x.is_floating_point() || dtypes == Dtypes::Same) return unary(op, x);
  if (dtypes == Dtypes::Unchanged) return x.clone();
  return unary(op, x.to(kFloat));
}

Tensor binary(Op op, const Tensor& a, const Tensor& b, const char* name) {
  ScalarType t = result_type(a, b);
  // True division, and ops without an int64 form, compute integers in float32 (int64 ** int64
  // stays int64, computed in float64).
  const bool integral_form = op != Op::Div && (ir::facts(op).has(ir::kInt64) || (op == Op::Pow && is_integer(t)));
  if (!is_floating(t) && !integral_form) t = get_default_dtype_as_scalartype();
  KILN_CHECK(!(op == Op::Sub && (a.dtype() == kBool || b.dtype() == kBool)), name,
             ": subtraction, the `-` operator, with a bool tensor is not supported (", detail::shape_str(a), " and ",
             detail::shape_str(b),
             "). If you are trying to invert a mask, use the `~` or `logical_not()` operator "
             "instead.");
  Shape s = broadcast(a, b, name);
  const bool compare = ir::op_kind(op) == ir::OpKind::Compare;
  Tensor ca, cb;
  return detail::elementwise(op, {as_dtype(a, t, ca), as_dtype(b, t, cb)}, std::move(s), compare ? kBool : t);
}

// b * alpha for add and sub; as libtorch, a floating-point alpha needs a floating-point result.
Tensor scaled(const Tensor& a, const Tensor& b, const Scalar& alpha, const char* op) {
  KILN_CHECK(!alpha.isFloatingPoint() || is_floating(result_type(a, b)), op,
             ": for integral input tensors, argument alpha must not be a floating point number (", detail::shape_str(a),
             " and ", detail::shape_str(b), ", alpha ", alpha.toDouble(), ")");
  return alpha.toDouble() == 1.0 ? b : b * alpha;
}
// b * alpha as one number, integral when both are (int tensor - 1 stays int64).
Scalar scaled(const Scalar& b, const Scalar& alpha) {
  if (alpha.toDouble() == 1.0) return b;
  if (b.isFloatingPoint() || alpha.isFloatingPoint()) return b.toDouble() * alpha.toDouble();
  return int64_t(uint64_t(b.toLong()) * uint64_t(alpha.toLong()));  // wrapping, as an int64 kernel would
}

}  // namespace

std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) { return broadcast(a, b, "broadcast_shapes"); }

// --- unary ---

Tensor neg(const Tensor& x) {
  KILN_CHECK(x.dtype() != kBool, "neg: negation, the `-` operator, on a bool tensor is not supported");
  return unary(Op::Neg, x);
}
// The table ops of frontend/elementwise_ops.def.
#define KILN_UNARY(name)
#define KILN_UNARY_OP(name, op, dtypes) \
  Tensor name(const Tensor& x) { return unary_table_op(Op::op, x, Dtypes::dtypes); }
#define KILN_BINARY_OP(name, op) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(Op::op, a, b, #name); }
#include "frontend/elementwise_ops.def"

Tensor log2(const Tensor& x) { return named(log(x) * (1.0 / std::log(2.0)), "Log2Backward0", {x}); }
Tensor rsqrt(const Tensor& x) { return named(reciprocal(sqrt(x)), "RsqrtBackward0", {x}); }
Tensor square(const Tensor& x) { return named(x * x, "PowBackward0", {x}); }
Tensor logical_not(const Tensor& x) { return unary(Op::Not, x.to(kBool)); }

// sigmoid through tanh: stable at both ends, in value and in gradient.
Tensor sigmoid(const Tensor& x) { return named(tanh(float_input(x) * 0.5) * 0.5 + 0.5, "SigmoidBackward0", {x}); }
// As ATen's clamp_min(x, 0) and threshold_backward: NaN stays NaN and its gradient passes; 0 and
// below give +0 and no gradient.
Tensor relu(const Tensor& x) { return named(where(x <= 0, 0, x), "ReluBackward0", {x}); }
Tensor silu(const Tensor& x) { return named(x * sigmoid(x), "SiluBackward0", {x}); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  KILN_CHECK(approximate == "none" || approximate == "tanh", "gelu: approximate must be 'none' or 'tanh', got '",
             approximate, "'");
  if (auto native = detail::native::gelu(x, approximate == "tanh")) return *native;
  tracer::EagerGroup eager_group;
  Tensor xf = float_input(x);
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    Tensor inner = (xf + xf * xf * xf * 0.044715) * k;
    return named(xf * 0.5 * (tanh(inner) + 1.0), "GeluBackward0", {x});
  }
  // x times the normal CDF, as PyTorch's x * 0.5 * (1 + erf(x / sqrt(2))) with the halving on
  // erf: the CDF's 0.5 * erf + 0.5 is one fma, and the backward pass has two multiplies fewer.
  return named(xf * (erf(xf * M_SQRT1_2) * 0.5 + 0.5), "GeluBackward0", {x});
}

Tensor pow(const Tensor& x, const Tensor& e) { return binary(Op::Pow, x, e, "pow"); }
Tensor pow(const Tensor& x, const Scalar& e) {
  KILN_CHECK(x.is_floating_point() || !e.isIntegral() || e.toLong() >= 0,
             "pow: integers to negative integer powers are not allowed (", detail::shape_str(x), ", exponent ",
             e.toLong(), ")");
  if (e.toDouble() == 1.0)
    return named(x.is_floating_point() || e.isIntegral() ? x.clone() : x.to(kFloat), "PowBackward0", {x});
  if (e.toDouble() == 2.0) {
    Tensor xf = x.is_floating_point() || e.isIntegral() ? x : x.to(kFloat);  // int ** 2.0 is float
    return named(xf * xf, "PowBackward0", {x});
  }
  return named(pow(x, wrap_scalar(e, x)), "PowBackward0", {x});
}
Tensor pow(const Scalar& x, const Tensor& e) { return named(pow(wrap_scalar(x, e), e), "PowBackward2", {e}); }

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  KILN_CHECK(min || max, "clamp: at least one of 'min' or 'max' must not be None (input ", detail::shape_str(x), ")");
  Tensor out = x;
  if (min) out = where(out < *min, wrap_scalar(*min, x), out);  // where broadcasts the number
  if (max) out = where(out > *max, wrap_scalar(*max, x), out);
  return named(out, "ClampBackward1", {x});
}
Tensor clamp_min(const Tensor& x, const Scalar& min) {
  return named(clamp(x, min, std::nullopt), "ClampMinBackward0", {x});
}
Tensor clamp_max(const Tensor& x, const Scalar& max) {
  return named(clamp(x, std::nullopt, max), "ClampMaxBackward0", {x});
}

// --- binary ---

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(Op::Add, a, scaled(a, b, alpha, "add"), "add");
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return named(add(a, wrap_scalar(scaled(b, alpha), a)), "AddBackward1", {a});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary(Op::Sub, a, scaled(a, b, alpha, "sub"), "sub");
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return named(sub(a, wrap_scalar(scaled(b, alpha), a)), "SubBackward1", {a});
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary(Op::Mul, a, b, "mul"); }
Tensor mul(const Tensor& a, const Scalar& b) { return named(mul(a, wrap_scalar(b, a)), "MulBackward1", {a}); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(Op::Div, a, b, "div"); }
Tensor div(const Tensor& a, const Scalar& b) { return named(div(a, wrap_scalar(b, a)), "DivBackward1", {a}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(Op::Max, a, b, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(Op::Min, a, b, "minimum"); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(Op::Eq, a, b, "eq"); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(Op::Ne, a, b, "ne"); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(Op::Lt, a, b, "lt"); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(Op::Le, a, b, "le"); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(Op::Gt, a, b, "gt"); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(Op::Ge, a, b, "ge"); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary(Op::Mul, a.to(kBool), b.to(kBool), "logical_and");
}
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(Op::Max, a.to(kBool), b.to(kBool), "logical_or"); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  KILN_CHECK(cond.dtype() == kBool, "where: expected condition to be a boolean tensor, but got ",
             detail::shape_str(cond));
  ScalarType t = result_type(a, b);
  Shape s = broadcast(cond.sizes(), broadcast(a, b, "where"), "where");
  Tensor ca, cb;
  return detail::elementwise(Op::Where, {cond, as_dtype(a, t, ca), as_dtype(b, t, cb)}, std::move(s), t);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrap_scalar(b, a)); }
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) { return where(cond, wrap_scalar(a, b), b); }

// masked_fill's mask, with a scalar or a 0-d tensor value: bool, broadcasting to x's shape.
static void check_fill_mask(const Tensor& x, const Tensor& mask) {
  KILN_CHECK(mask.dtype() == kBool, "masked_fill: expected a bool mask, got ", detail::shape_str(mask));
  Shape s = broadcast(x, mask, "masked_fill");
  KILN_CHECK(IntArrayRef(s) == x.sizes(), "masked_fill: mask ", detail::shape_str(mask),
             " does not broadcast to the input's shape ", x.sizes().vec());
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_fill_mask(x, mask);
  KILN_CHECK(detail::converts_without_overflow(value, x.dtype()), "masked_fill: value ", value.toDouble(),
             " cannot be converted to type ", x.dtype(), " without overflow (input ", detail::shape_str(x), ")");
  return named(where(mask, detail::constant(value, x.dtype()), x), "MaskedFillBackward0", {x});
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) { return start + (end - start) * weight; }
Tensor addcmul(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value) {
  return self + a * b * value;
}
Tensor addcdiv(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value) {
  return self + a / b * value;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  return allclose(a, b, rtol, atol, /*equal_nan=*/false);
}
bool equal(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && (a == b).all().item<bool>(); }

// --- operators ---

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap_scalar(a, b), b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap_scalar(a, b), b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, wrap_scalar(b, a)); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, wrap_scalar(b, a)); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, wrap_scalar(b, a)); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, wrap_scalar(b, a)); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, wrap_scalar(b, a)); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, wrap_scalar(b, a)); }
Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
// &, |, ^ and ~ are libtorch's bitwise ops (frontend/integer_ops.def): logical on bool tensors.
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }
Tensor operator&(const Scalar& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Scalar& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Scalar& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor Tensor::operator~() const { return kiln::bitwise_not(*this); }

// --- bitwise ---

// Integer and bool operands only, as libtorch's kernels (shifts: integers only); the result type
// as every binary op promotes, a number taking the tensor's dtype within its category.
static Tensor bitwise(Op op, const Tensor& a, const Tensor& b, const char* name) {
  const ScalarType t = result_type(a, b);
  const bool shift = op == Op::ShiftLeft || op == Op::ShiftRight;
  KILN_CHECK(!is_floating(t) && !(shift && t == kBool), name, ": not implemented for ", dtype_name(t), " (",
             detail::shape_str(a), " and ", detail::shape_str(b), "); it takes ",
             shift ? "integer tensors" : "integer and bool tensors");
  Shape s = broadcast(a, b, name);
  Tensor ca, cb;
  return detail::elementwise(op, {as_dtype(a, t, ca), as_dtype(b, t, cb)}, std::move(s), t);
}
#define KILN_INTEGER_BINARY(name, op)                                                                    \
  Tensor name(const Tensor& a, const Tensor& b) { return bitwise(Op::op, a, b, #name); }                 \
  Tensor name(const Tensor& a, const Scalar& b) { return bitwise(Op::op, a, wrap_scalar(b, a), #name); } \
  Tensor name(const Scalar& a, const Tensor& b) { return bitwise(Op::op, wrap_scalar(a, b), b, #name); } \
  Tensor Tensor::name(const Tensor& other) const { return kiln::name(*this, other); }                    \
  Tensor Tensor::name(const Scalar& other) const { return kiln::name(*this, other); }
#include "frontend/integer_ops.def"
// ~ of a bool is logical (Not): the integer BitNot of 1 would be -2, true again.
Tensor bitwise_not(const Tensor& x) {
  KILN_CHECK(!x.is_floating_point(), "bitwise_not: not implemented for ", dtype_name(x.dtype()), " (",
             detail::shape_str(x), "); it takes integer and bool tensors");
  return unary(x.dtype() == kBool ? Op::Not : Op::BitNot, x);
}
Tensor Tensor::bitwise_not() const { return kiln::bitwise_not(*this); }
// libtorch's names of the operators: __and__ is bitwise_and, ... (in place: inplace.cpp).
#define KILN_INTEGER_OPERATOR(dunder, name)                                             \
  Tensor Tensor::__##dunder##__(const Tensor& o) const { return kiln::name(*this, o); } \
  Tensor Tensor::__##dunder##__(const Scalar& o) const { return kiln::name(*this, o); }
#include "frontend/integer_ops.def"

// --- rounding division ---

// libtorch 1.13's floor division of floats (div_floor_floating, Python's //): from fmod's
// remainder, the quotient corrected towards -inf and rounded to the nearest integer; a zero
// quotient keeps the sign of a / b, and by zero it is a / b. No gradient flows (zero, as libtorch's).
static Tensor floor_divide_floats(const Tensor& a, const Tensor& b) {
  const Tensor mod = fmod(a, b);
  Tensor div = (a - mod) / b;
  div = where(logical_and(mod != 0, (b < 0) != (mod < 0)), div - 1, div);
  const Tensor floored = floor(div);
  Tensor out = where(div - floored > 0.5, floored + 1, floored);
  const Tensor quotient = a / b;
  out = where(div == 0, quotient * 0, out);  // 0 with the quotient's sign
  return where(b == 0, quotient, out);
}
// Integers: C's truncating quotient, one less where the remainder's sign differs from b's. By
// zero, 0 (libtorch throws ZeroDivisionError, which a lazy kernel cannot).
static Tensor floor_divide_integers(const Tensor& a, const Tensor& b, const Shape& s, ScalarType t) {
  const Tensor quotient = detail::elementwise(Op::Div, {a, b}, s, t);
  const Tensor mod = fmod(a, b);
  return quotient - logical_and(mod != 0, (b < 0) != (mod < 0)).to(t);
}
// A result that depends on `inputs` with a zero gradient, as libtorch's rounding divisions have:
// where(true, value, input), whose gradient to the input is where(true, 0, grad).
static Tensor with_zero_gradient(Tensor value, const Tensor& a, const Tensor& b) {
  if (!autograd::GradMode::is_enabled() || !(a.requires_grad() || b.requires_grad())) return value;
  const Tensor all = kiln::ones_like(value, kBool);
  for (const Tensor* input : {&a, &b})
    if (input->requires_grad()) value = where(all, value, *input);
  return value;
}

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode) {
  if (!rounding_mode) return div(a, b);
  const bool floor_mode = *rounding_mode == "floor";
  KILN_CHECK(floor_mode || *rounding_mode == "trunc",
             "div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *rounding_mode, "'");
  const ScalarType t = result_type(a, b);
  KILN_CHECK(t != kBool, "div: rounding_mode '", *rounding_mode, "' is not implemented for bool (",
             detail::shape_str(a), " and ", detail::shape_str(b), ")");
  const Shape s = broadcast(a, b, "div");
  Tensor ca, cb;
  const Tensor& x = as_dtype(a, t, ca);
  const Tensor& y = as_dtype(b, t, cb);
  if (is_integer(t)) return floor_mode ? floor_divide_integers(x, y, s, t) : detail::elementwise(Op::Div, {x, y}, s, t);
  Tensor out;
  {
    autograd::NoGradGuard no_grad;
    out = floor_mode ? floor_divide_floats(x, y) : trunc(x / y);
  }
  return named(with_zero_gradient(out, a, b), "DivBackward3", {a, b});
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode) {
  return div(a, wrap_scalar(b, a), rounding_mode);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  KILN_CHECK(result_type(a, b) != kBool, "floor_divide: not implemented for bool (", detail::shape_str(a), " and ",
             detail::shape_str(b), ")");
  return div(a, b, "floor");
}
Tensor floor_divide(const Tensor& a, const Scalar& b) { return floor_divide(a, wrap_scalar(b, a)); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string_view> mode) const { return kiln::div(*this, o, mode); }
Tensor Tensor::div(const Scalar& o, std::optional<std::string_view> mode) const { return kiln::div(*this, o, mode); }
Tensor Tensor::floor_divide(const Tensor& o) const { return kiln::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return kiln::floor_divide(*this, o); }
// --- methods ---

#define KILN_UNARY(name) \
  Tensor Tensor::name() const { return kiln::name(*this); }
#define KILN_BINARY(name)                                                              \
  Tensor name(const Tensor& a, const Scalar& b) { return name(a, wrap_scalar(b, a)); } \
  Tensor Tensor::name(const Tensor& other) const { return kiln::name(*this, other); }  \
  Tensor Tensor::name(const Scalar& other) const { return kiln::name(*this, other); }
#include "frontend/elementwise_ops.def"
Tensor Tensor::gelu(const std::string& a) const { return kiln::gelu(*this, a); }
Tensor Tensor::pow(const Tensor& e) const { return kiln::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return kiln::pow(*this, e); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return kiln::clamp(*this, lo, hi); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return kiln::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return kiln::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return kiln::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return kiln::div(*this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return kiln::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return kiln::minimum(*this, o); }
Tensor Tensor::eq(const Tensor& o) const { return kiln::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return *this == o; }
Tensor Tensor::ne(const Tensor& o) const { return kiln::ne(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return *this != o; }
Tensor Tensor::lt(const Tensor& o) const { return kiln::lt(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return *this < o; }
Tensor Tensor::le(const Tensor& o) const { return kiln::le(*this, o); }
Tensor Tensor::le(const Scalar& o) const { return *this <= o; }
Tensor Tensor::gt(const Tensor& o) const { return kiln::gt(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return *this > o; }
Tensor Tensor::ge(const Tensor& o) const { return kiln::ge(*this, o); }
Tensor Tensor::ge(const Scalar& o) const { return *this >= o; }
Tensor Tensor::logical_not() const { return kiln::logical_not(*this); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const { return kiln::masked_fill(*this, mask, v); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& v) const {
  KILN_CHECK(v.dim() == 0, "masked_fill: only supports a 0-dimensional value tensor, but got ", detail::shape_str(v),
             " (input ", detail::shape_str(*this), ")");
  check_fill_mask(*this, mask);
  return named(kiln::where(mask, v.to(dtype()), *this), "MaskedFillBackward1", {*this, v});
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const { return kiln::where(cond, *this, other); }

}  // namespace kiln
