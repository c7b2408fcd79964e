#include "codegen/halide/ops.h"

#include <limits>

#include "runtime/error.h"
#include "tracer/op_scalar.h"
#include "tracer/special_functions.h"

namespace kiln::codegen::halide {

using namespace Halide;
using Internal::const_false;
using Internal::const_true;
using Internal::make_const;
using Internal::make_one;
using Internal::make_zero;
using ir::Op;

Target kernel_target() {
  // strict_float: NaN and infinity keep their IEEE meaning (max propagates NaN, as in PyTorch).
  Target t = get_host_target()
                 .with_feature(Target::NoRuntime)
                 .with_feature(Target::NoAsserts)
                 .with_feature(Target::StrictFloat)
                 .with_feature(Target::NoBoundsQuery);
  // Halide 14 takes a CPU with AVX512-BF16 (AMD Zen 4, this machine) for a Sapphire Rapids, and
  // LLVM then uses AVX512-FP16 instructions (vmovw), which such a CPU lacks: a kernel moving bools
  // in 2-wide vectors died of SIGILL. (The bool-vector workarounds in reduction.cpp and
  // schedule.cpp may predate this fix.)
  if (!__builtin_cpu_supports("avx512fp16")) t = t.without_feature(Target::AVX512_SapphireRapids);
  return t;
}

// Narrow integers compute as int64 and float16/bfloat16 as float32, each node's result rounded
// back to its dtype (round_to_dtype), as the interpreter and PyTorch's CPU kernels compute them.
Type value_type(ScalarType t) {
  switch (t) {
    case kBool: return Bool();
    case kLong:
    case kByte:
    case kChar:
    case kShort:
    case kInt: return Int(64);
    case kFloat:
    case kHalf:
    case kBFloat16: return Float(32);
    case kDouble: return Float(64);
  }
  return Float(32);
}
// Bools are stored as bytes, bfloat16 as its 16 bits (Halide 14's BFloat(16) arithmetic is not
// needed: values are float32 whose low 16 bits are zero).
Type storage_type(ScalarType t) {
  switch (t) {
    case kBool:
    case kByte: return UInt(8);
    case kChar: return Int(8);
    case kShort: return Int(16);
    case kInt: return Int(32);
    case kHalf: return Float(16);
    case kBFloat16: return UInt(16);
    case kLong:
    case kFloat:
    case kDouble: break;
  }
  return value_type(t);
}

Expr to_value(Expr e, ScalarType t) {
  if (t == kBool) return e != 0;
  if (t == kBFloat16) return reinterpret(Float(32), cast(UInt(32), e) << 16);
  return e.type() == value_type(t) ? e : cast(value_type(t), e);
}
// Whether a float32 is NaN, on its bits (Halide 14's float16 conversion loses NaN, giving infinity).
Expr float32_nan(Expr e) {
  return (reinterpret(UInt(32), e) & Expr(uint32_t(0x7fffffffu))) > Expr(uint32_t(0x7f800000u));
}
Expr to_storage(Expr e, ScalarType t) {
  if (t == kBFloat16) return cast(UInt(16), reinterpret(UInt(32), e) >> 16);  // already rounded
  if (t == kHalf) return select(float32_nan(e), reinterpret(Float(16), Expr(uint16_t(0x7e00))), cast(Float(16), e));
  return e.type() == storage_type(t) ? e : cast(storage_type(t), e);
}
// Whether e is integer casts of a float: Halide 14's simplifier drops integer casts between a
// narrowing cast and a float (cast(uint8, cast(int64, cast(int32, f))) becomes cast(uint8, f),
// which LLVM computes as 0 for a negative f).
bool casts_of_float(const Expr& e) {
  for (const Internal::Cast* c = e.as<Internal::Cast>(); c; c = c->value.as<Internal::Cast>())
    if (c->value.type().is_float()) return true;
  return false;
}
Expr round_to_dtype(Expr e, ScalarType t) {
  if (is_narrow_integer(t)) {
    // A mask of the bits the truncation keeps anyway stops the simplifier at the float. Not for
    // int32, whose overflow Halide assumes away: it would take the masked value as >= 0.
    const int bits = storage_type(t).bits();
    if (bits < 32 && casts_of_float(e)) e = e & make_const(e.type(), (int64_t(1) << bits) - 1);
    return cast(value_type(t), cast(storage_type(t), e));
  }
  if (t == kHalf) return select(float32_nan(e), e, cast(Float(32), cast(Float(16), e)));
  if (t != kBFloat16) return e;
  // To nearest even on the bits, NaN to the quiet NaN c10::BFloat16 gives.
  Expr bits = reinterpret(UInt(32), e);
  Expr rounded = (bits + (Expr(uint32_t(0x7fff)) + ((bits >> 16) & Expr(uint32_t(1))))) & Expr(uint32_t(0xffff0000u));
  return reinterpret(Float(32), select(float32_nan(e), Expr(uint32_t(0x7fc00000u)), rounded));
}
Expr convert(Expr e, ScalarType to) {
  Type t = value_type(to);
  if (to == kBool) return e.type() == t ? e : e != make_zero(e.type());
  // A float to a narrow integer converts to int32 first (then wraps), as the interpreter
  // (float_to_integer) and compiled C++ do.
  if (is_narrow_integer(to) && e.type().is_float()) e = cast(Int(32), e);
  return round_to_dtype(e.type() == t ? e : cast(t, e), to);
}
bool is_float(const Expr& e) { return e.type().is_float(); }

namespace {

// A libm call, for what Halide lacks at float64 (erf) or computes less accurately (log1p, pow).
Expr libm(const char* name32, const char* name64, std::vector<Expr> args) {
  const Type t = args[0].type();
  return Internal::Call::make(t, t == Float(64) ? name64 : name32, args, Internal::Call::PureExtern);
}

// a * b + c rounded once. strict_float (which kiln needs for NaN and infinity) stops LLVM from
// contracting a * b + c itself, so the polynomials below ask for its intrinsic by name: Halide
// declares it as an extern function, and LLVM vectorizes the calls into vfmadd.
Expr fma(Expr a, Expr b, Expr c) {
  static const bool native = kernel_target().has_feature(Target::FMA);
  if (!native) return a * b + c;
  const Type t = a.type();
  return Internal::Call::make(t, t == Float(64) ? "llvm.fma.f64" : "llvm.fma.f32", {a, b, c},
                              Internal::Call::PureExtern);
}
// -x for floats as IEEE negates it: -0 - x, which LLVM compiles to a sign flip (0 - x gave +0
// for +0).
Expr negate(Expr x) { return x.type().is_float() ? make_const(x.type(), -0.0) - x : -x; }
// A value read from a buffer (an input, or a value a row kernel stored), not computed here.
bool is_load(const Expr& e) {
  const auto* c = e.as<Internal::Call>();
  return c && (c->call_type == Internal::Call::Image || c->call_type == Internal::Call::Halide);
}
// x + y and x - y as one fma where x or y is a float product of computed values: GCC and Clang
// contract a * b + c so by default in C++ (-ffp-contract), libtorch's own kernels included, as
// CUDA does; strict_float keeps LLVM from doing it here. The sum is rounded once, not twice: it
// can differ from the interpreter's and from eager mode's, which round the product first, by an
// ulp of the product. A product of a value read from a buffer stays a multiply and an add:
// Halide calls fma lane by lane and LLVM gathers the lanes back into vectors, and a loaded factor
// came back assembled from inserts and blends (LayerNorm + GELU's loop: 187 instructions per 16
// elements with LayerNorm's weight in an fma, 178 without).
Expr add_contracted(Expr x, Expr y, bool subtract) {
  auto contractible = [](const Internal::Mul* m) { return m && !is_load(m->a) && !is_load(m->b); };
  if (x.type().is_float()) {
    if (const auto* m = x.as<Internal::Mul>(); contractible(m)) return fma(m->a, m->b, subtract ? negate(y) : y);
    if (const auto* m = y.as<Internal::Mul>(); contractible(m)) return fma(subtract ? negate(m->a) : m->a, m->b, x);
  }
  return subtract ? x - y : x + y;
}
// c[0] * x^(n-1) + ... + c[n-1], by Horner's rule: n - 1 dependent fmas.
Expr polynomial(Expr x, std::initializer_list<float> c) {
  Expr p = *c.begin();
  for (auto a = c.begin() + 1; a != c.end(); ++a) p = fma(p, x, *a);
  return p;
}
// The same by Estrin's scheme: the high and low coefficients evaluated apart and joined by x^m
// (m a power of two, x^m by squaring), log2(n) fmas deep for ~log2(n) more ops. erf uses it:
// GELU's backward, which computes erf and exp, was bound by their chains' latency on one thread
// (LayerNorm + GELU's backward kernel 0.74-0.84 -> 0.67-0.70 ms at 1 thread; no change at 2).
// Over all floats erf is the more accurate for it (6.8 ulps, 7.5 by Horner); tanh keeps Horner's
// rule, more accurate there (5.3 ulps, 5.7 by Estrin). exp went back to Horner's rule with one
// scale factor: LayerNorm + GELU's step unchanged at 1 thread (0.99-1.01 ms against 0.98-0.99).
Expr estrin(const float* c, int n, const std::vector<Expr>& squarings) {
  if (n == 1) return c[0];
  int k = 0;  // x^(2^k) joins the halves: the largest power of two below n
  while ((2 << k) < n) ++k;
  const int low = 1 << k;
  return fma(estrin(c, n - low, squarings), squarings[k], estrin(c + n - low, low, squarings));
}
Expr polynomial_estrin(Expr x, std::initializer_list<float> c) {
  std::vector<Expr> squarings{x};  // x, x^2, x^4, ...
  while ((2 << (squarings.size() - 1)) < int(c.size())) squarings.push_back(squarings.back() * squarings.back());
  return estrin(c.begin(), int(c.size()), squarings);
}

// Float32 exp, log and tanh that vectorize: Halide's own exp/log/tanh call scalar libm through its
// runtime, one call per lane. These keep IEEE special values and are accurate to a few ulps.
// Under strict_float, Halide's is_nan and floor are runtime calls too: NaN is tested on the bits,
// and rounding is done by adding a bias (vector_exp).
Expr nan_bits(Expr x) {
  if (x.type().bits() == 64)
    return (reinterpret(Int(64), x) & Expr(int64_t(0x7fffffffffffffff))) > Expr(int64_t(0x7ff0000000000000));
  return (reinterpret(Int(32), x) & 0x7fffffff) > 0x7f800000;
}
// NaN in a maximum or minimum: Halide's is_nan for float32 (a vector compare, cheaper in a row's
// max than the bits); for float64 the bits, as a reviewer's program lost a float64 NaN to is_nan
// in a kernel mixing both precisions.
Expr is_nan_value(Expr x) { return x.type().bits() == 64 ? nan_bits(x) : is_nan(x); }
// |x| of a float by clearing its sign bit, as C's fabs: Halide's abs kept -0.0 negative in
// float64 kernels, where the interpreter and libtorch give +0.0.
Expr float_abs(Expr x) {
  if (x.type().bits() == 64) return reinterpret(x.type(), reinterpret(Int(64), x) & Expr(int64_t(0x7fffffffffffffff)));
  return reinterpret(x.type(), reinterpret(Int(32), x) & 0x7fffffff);
}
// x clamped to [lo, hi], NaN kept: each comparison is false for NaN, so NaN falls through to x
// (Halide's clamp compiles to x86's min and max, which answer the bound). A NaN then runs through
// the polynomial that follows and comes out NaN with no test of its own. Each select compares the
// value it returns otherwise, so LLVM makes it one max or min with that value as the operand x86
// returns for NaN: two ops on AVX2, as a plain clamp, where clamp and NaN test were five (exp) or
// seven (tanh, erf).
Expr clamp_keeping_nan(Expr x, float lo, float hi) {
  Expr above_lo = select(x < lo, Expr(lo), x);
  return select(above_lo > hi, Expr(hi), above_lo);
}
Expr vector_exp(Expr x) {
  // exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln 2 / 2. The polynomial computes 2 exp(r)
  // and the scale is 2^(n - 1), so that one product covers every result: with x clamped to
  // [-104, 89] (below the largest x whose exp rounds to 0, -103.97, to past the largest whose exp
  // is finite), n - 1 runs from -151 to 127, and 2^(n - 1) is a normal float or, below -126, a
  // subnormal one (0 below -149). The results that are subnormal are rounded once, but for the
  // smallest, 2^-149, which comes out 0 (x in (-103.97, -102.93), up to 1.41 steps of 2^-149
  // off); those past the float range overflow to inf, with no case of their own. NaN passes the
  // clamp and stays NaN. The scale was two factors 2^(n/2), each built by integer ops on the
  // vector pipes: one product instead took softmax cross-entropy from 0.91-0.96 ms to 0.79-0.91,
  // median 0.81 (AVX2, 2 threads).
  Expr c = clamp_keeping_nan(x, -104.0f, 89.0f);
  // n by adding 1.5 * 2^23: the sum's units are integers, rounded to nearest, and its low
  // mantissa bits hold n (here n - 1 + 127, the scale's biased exponent).
  const float round_bias = 12582912.0f, biased_zero = round_bias + 126.0f;
  Expr biased = fma(c, 1.44269504088896341f, biased_zero);
  Expr n = biased - biased_zero;
  Expr r = fma(n, 2.12194440e-4f, fma(n, -0.693359375f, c));  // ln 2 in two parts (Cody and Waite)
  // 2 exp(r) to degree 6 by Horner's rule (coefficients fitted for relative error, 3.1e-9 on
  // [-ln 2 / 2, ln 2 / 2]; Cephes' degree 7 before): 0.89 ulps at worst over all floats whose exp
  // is a normal float, checked against double exp, every float.
  Expr two_exp_r = polynomial(r, {2 * 1.3814540070282155e-3f, 2 * 8.36874512719841e-3f, 2 * 4.1668390786418534e-2f,
                                  2 * 1.6666520398845847e-1f, 2 * 4.999999343211154e-1f, 2.0f, 2.0f});
  Expr bits = reinterpret(UInt(32), biased);  // unsigned: the shift below wraps, by design
  // A normal 2^(n - 1): the exponent field. Below -126 its int is 0 or negative, and the
  // subnormal 2^(n - 1) = 2^22 >> (-127 - (n - 1)) takes over (max); above, the shift is capped
  // at 31 (a shift past the width is undefined) and gives 0.
  Expr normal = reinterpret(Int(32), bits << 23);
  Expr shift = min(reinterpret(UInt(32), Expr(round_bias)) - bits, Expr(uint32_t(31)));
  Expr subnormal = reinterpret(Int(32), Expr(uint32_t(0x400000)) >> shift);
  return two_exp_r * reinterpret(Float(32), max(normal, subnormal));
}
Expr vector_log(Expr x) {
  const Expr inf = Expr(std::numeric_limits<float>::infinity()), nan = Expr(std::numeric_limits<float>::quiet_NaN());
  return select(nan_bits(x) || x < 0, nan, x == 0, -inf, x == inf, inf, fast_log(x));
}
// Float32 erf as Eigen and XLA compute it: x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (beyond,
// erf rounds to +-1), P of degree 6 and Q of degree 4 in x^2, by FMA: 6.8 ulps at worst over all
// floats in [-10, 10] (checked against double erf, every float; 7.5 by Horner's rule, as Halide's
// erf). Halide's, a select between two polynomials both computed, took ~19 multiplies to this
// one's 12 (GELU's backward, the widest kernel of LayerNorm + GELU, is bound by the multiplier),
// and gave NaN at +-inf and +0 at -0. x times the ratio, not x * P first: for tiny x, x * P would
// round to a subnormal. The result is clamped to [-1, 1]: just below 4 the ratio exceeds 1 by up
// to 4 ulps, which made GELU(x) positive for x near -5.5.
Expr vector_erf(Expr a) {
  Expr x = clamp_keeping_nan(a, -4.0f, 4.0f), x2 = x * x;
  Expr p = polynomial_estrin(
      x2, {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
           -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f});
  Expr q = polynomial_estrin(x2, {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                  -7.37332916720468e-03f, -1.42647390514189e-02f});
  return clamp_keeping_nan(x * (p / q), -1.0f, 1.0f);
}
// Eigen's rational approximation (generic_fast_tanh_float): odd degree 13 over even degree 6,
// c * P(c^2) / Q(c^2), 5.3 ulps at worst over all floats in [-10, 10] (checked against double
// tanh, every float). P's last coefficient is Q's (Eigen's is 1.3e-7 smaller): tanh(x) / x is 1 at
// 0, so for small x the ratio rounds to 1 and c times it is x, digit for digit, with no test for
// small x (Eigen's select, x below 3.5e-4, cost GeluChain 9% on AVX2); below 3.5e-4 every float
// is within 0.63 ulps. The ratio is taken before the product: c * P first would go subnormal
// near the smallest floats.
Expr vector_tanh(Expr x) {
  Expr c = clamp_keeping_nan(x, -9.0f, 9.0f), c2 = c * c;
  Expr p = polynomial(c2, {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f, 5.12229709037114e-08f,
                           1.48572235717979e-05f, 6.37261928875436e-04f, 4.89352518554385e-03f});
  Expr q = polynomial(c2, {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f, 4.89352518554385e-03f});
  return c * (p / q);
}

// A float64 expression for tracer/special_functions.h, whose numbers mix with C++ doubles at full
// precision (a double next to an Expr would pass through Halide's int or float overloads).
struct F64 {
  Expr e;
  F64(Expr x) : e(std::move(x)) {}  // NOLINT: implicit, as a double is
  F64(double x) : e(Expr(x)) {}     // NOLINT
};
F64 operator+(const F64& a, const F64& b) { return a.e + b.e; }
F64 operator-(const F64& a, const F64& b) { return a.e - b.e; }
F64 operator*(const F64& a, const F64& b) { return a.e * b.e; }
F64 operator/(const F64& a, const F64& b) { return a.e / b.e; }
F64 operator-(const F64& a) { return make_const(Float(64), -0.0) - a.e; }
Expr operator<(const F64& a, const F64& b) { return a.e < b.e; }
Expr operator>(const F64& a, const F64& b) { return a.e > b.e; }
Expr operator==(const F64& a, const F64& b) { return a.e == b.e; }
// The policy: lgamma, digamma, trigamma and erfinv compute in float64 (a float32 input converted
// exactly, the result rounded once).
struct HalideMath {
  static F64 select(Expr c, const F64& a, const F64& b) { return Halide::select(c, a.e, b.e); }
  static F64 log(const F64& x) { return Halide::log(x.e); }
  static F64 exp(const F64& x) { return Halide::exp(x.e); }
  static F64 sqrt(const F64& x) { return Halide::sqrt(x.e); }
  static F64 sin(const F64& x) { return Halide::sin(x.e); }
  static F64 cos(const F64& x) { return Halide::cos(x.e); }
  static F64 round(const F64& x) { return Halide::round(x.e); }
  static F64 abs(const F64& x) { return float_abs(x.e); }
  static F64 erf(const F64& x) { return libm("erff", "erf", {x.e}); }
  static F64 erfc(const F64& x) { return libm("erfcf", "erfc", {x.e}); }
  static F64 inf(const F64&) { return std::numeric_limits<double>::infinity(); }
  static F64 nan(const F64&) { return std::numeric_limits<double>::quiet_NaN(); }
};
template <F64 (*f)(const F64&)>
Expr in_float64(Expr x) {
  const Type t = x.type();
  return t == Float(64) ? f(x).e : cast(t, f(cast(Float(64), x)).e);
}

// |a| with b's sign bit, on the bits (libm's copysign would be called lane by lane).
Expr copy_sign(Expr a, Expr b) {
  const Type bits = UInt(a.type().bits());
  const Expr sign = make_const(bits, uint64_t(1) << (bits.bits() - 1));
  return reinterpret(a.type(), (reinterpret(bits, a) & ~sign) | (reinterpret(bits, b) & sign));
}

// fmod of integers as C's %, which truncates: Halide's % is Euclidean (never negative), so a
// negative dividend's nonzero remainder moves down by |b|. By 0, 0.
Expr integer_fmod(Expr a, Expr b) {
  Expr r = a % b;
  Expr c_remainder = select(a < 0 && r != 0, r - select(b < 0, make_zero(b.type()) - b, b), r);
  return select(b == 0, make_zero(a.type()), c_remainder);
}

// Shifts as ir::wrapping_op: a count outside [0, 63] gives 0 (-1 for a negative number shifted
// right); the count is clamped first, as LLVM's shift by the width or more is poison.
Expr shift(Expr a, Expr count, bool left) {
  Expr out_of_range = count < 0 || count > 63;
  Expr c = cast(UInt(64), clamp(count, 0, 63));
  if (left) return select(out_of_range, make_zero(a.type()), reinterpret(a.type(), reinterpret(UInt(64), a) << c));
  return select(out_of_range, select(a < 0, cast(a.type(), -1), make_zero(a.type())), a >> c);
}

// Integer division as C's (truncating) and ir::wrapping_op: by 0, 0; by -1, the wrapping negation.
// Halide's / is Euclidean (its remainder never negative), one away from C's where a < 0 leaves a
// remainder. (Through float64, int64 lost its low bits and x / 0 came out INT64_MIN.)
Expr integer_division(Expr a, Expr b) {
  const Expr zero = make_zero(a.type());
  Expr euclidean = a / b;
  Expr truncated =
      select(a < 0 && a % b != 0, euclidean + select(b > 0, make_one(a.type()), cast(a.type(), -1)), euclidean);
  Expr negated = reinterpret(a.type(), make_zero(UInt(64)) - reinterpret(UInt(64), a));  // INT64_MIN stays
  return select(b == 0, zero, b == -1, negated, truncated);
}

// A comparison of floats that may be NaN, as the interpreter (and C) compares them.
Expr lower_compare(Op op, const std::vector<Expr>& a) {
  // Halide's simplifier folds x == x to true, x != x to false (x <= x, x >= x too) whatever x is:
  // for a float that may be NaN, the answer depends on whether it is one (x != x is how
  // programs ask).
  if (is_float(a[0]) && Internal::equal(a[0], a[1])) {
    const Expr nan = nan_bits(a[0]);
    if (op == Op::Eq || op == Op::Le || op == Op::Ge) return !nan;
    if (op == Op::Ne) return nan;
    return const_false();
  }
  // Halide marks a float compare no-NaNs for LLVM even under strict_float (only float-typed
  // expressions are made strict): a vector compare is right regardless, but a scalar == tests x86's
  // zero flag alone, which NaN sets too (NaN == 0 was true in a one-element kernel). Compiled
  // inside strict_float, the compare keeps its parity test; vectors compile as before.
  auto unordered_safe = [&](Expr compare) { return is_float(a[0]) ? strict_float(compare) : compare; };
  // Halide's simplifier also rewrites a <= b as !(b < a), true where either is NaN: for floats,
  // NaN is tested on the bits, so that NaN compares false as in the interpreter (relu(NaN) was 0).
  auto ordered = [&](Expr compare) {
    return is_float(a[0]) ? compare && !(nan_bits(a[0]) || nan_bits(a[1])) : compare;
  };
  if (op == Op::Eq) return unordered_safe(a[0] == a[1]);
  if (op == Op::Ne) return unordered_safe(a[0] != a[1]);
  if (op == Op::Lt) return a[0] < a[1];
  if (op == Op::Le) return ordered(a[0] <= a[1]);
  if (op == Op::Gt) return a[0] > a[1];
  return ordered(a[0] >= a[1]);
}

}  // namespace

// One case per op: a new op in tracer/ops.def does not compile until it is handled here.
Expr lower_op(const ir::Node& n, const std::vector<Expr>& a) {
  const Type t = value_type(n.dtype);
  switch (n.op) {
    case Op::Copy: return a[0];
    case Op::Cast: return convert(a[0], n.dtype);
    case Op::Neg: return negate(a[0]);
    case Op::Exp: return t == Float(32) ? vector_exp(a[0]) : exp(a[0]);
    case Op::Log: return t == Float(32) ? vector_log(a[0]) : log(a[0]);
    case Op::Log1p: return libm("log1pf", "log1p", {a[0]});
    case Op::Sin: return sin(a[0]);
    case Op::Cos: return cos(a[0]);
    case Op::Sqrt: return sqrt(a[0]);
    case Op::Recip: return make_one(t) / a[0];
    case Op::Abs: return t.is_float() ? float_abs(a[0]) : cast(t, abs(a[0]));
    case Op::Sign: return select(a[0] > 0, make_one(t), select(a[0] < 0, cast(t, -1), a[0]));
    case Op::Tanh: return t == Float(32) ? vector_tanh(a[0]) : tanh(a[0]);
    case Op::Erf: return t == Float(32) ? vector_erf(a[0]) : libm("erff", "erf", {a[0]});
    case Op::Not: return !a[0];
    // Halide's floor, ceil, round (half to even) and trunc; integers are their own rounding.
    case Op::Floor: return t.is_float() ? floor(a[0]) : a[0];
    case Op::Ceil: return t.is_float() ? ceil(a[0]) : a[0];
    case Op::Round: return t.is_float() ? round(a[0]) : a[0];
    case Op::Trunc: return t.is_float() ? trunc(a[0]) : a[0];
    // libm's, lane by lane (as Halide's own atan, asin, ... would call): within an ulp.
    case Op::Atan: return libm("atanf", "atan", {a[0]});
    case Op::Asin: return libm("asinf", "asin", {a[0]});
    case Op::Acos: return libm("acosf", "acos", {a[0]});
    case Op::Sinh: return libm("sinhf", "sinh", {a[0]});
    case Op::Cosh: return libm("coshf", "cosh", {a[0]});
    case Op::Asinh: return libm("asinhf", "asinh", {a[0]});
    case Op::Acosh: return libm("acoshf", "acosh", {a[0]});
    case Op::Atanh: return libm("atanhf", "atanh", {a[0]});
    case Op::Expm1: return libm("expm1f", "expm1", {a[0]});
    case Op::Exp2: return libm("exp2f", "exp2", {a[0]});
    case Op::Erfc: return libm("erfcf", "erfc", {a[0]});
    case Op::Erfinv: return in_float64<special::erfinv<HalideMath, F64>>(a[0]);
    case Op::Lgamma: return in_float64<special::lgamma<HalideMath, F64>>(a[0]);
    case Op::Digamma: return in_float64<special::digamma<HalideMath, F64>>(a[0]);
    case Op::Trigamma: return in_float64<special::trigamma<HalideMath, F64>>(a[0]);
    case Op::Add: return t.is_bool() ? a[0] || a[1] : add_contracted(a[0], a[1], false);
    case Op::Sub: return add_contracted(a[0], a[1], true);
    case Op::Mul: return t.is_bool() ? a[0] && a[1] : a[0] * a[1];
    case Op::Div:
      if (t.is_float()) return a[0] / a[1];
      return integer_division(a[0], a[1]);
    case Op::Pow:
      // libm's, lane by lane: Halide's float pow gave 0 for NaN^y, 2^1e30 and 2^inf, 1.8e19 for
      // inf^0.5 and NaN for (-inf)^0.5, where C's pow (the interpreter's) and libtorch give NaN,
      // inf, inf and inf. A pow of two tensors is rare in training; its special values are not.
      if (t.is_float()) return libm("powf", "pow", {a[0], a[1]});
      return cast(t, pow(cast(Float(64), a[0]), cast(Float(64), a[1])));
    case Op::Max:
      if (t.is_bool()) return a[0] || a[1];
      // NaN wins, as in PyTorch (a + b is NaN when either is).
      return is_float(a[0]) ? select(is_nan_value(a[0]) || is_nan_value(a[1]), a[0] + a[1], max(a[0], a[1]))
                            : max(a[0], a[1]);
    case Op::Min:
      if (t.is_bool()) return a[0] && a[1];
      return is_float(a[0]) ? select(is_nan_value(a[0]) || is_nan_value(a[1]), a[0] + a[1], min(a[0], a[1]))
                            : min(a[0], a[1]);
    case Op::Fmod: return t.is_float() ? libm("fmodf", "fmod", {a[0], a[1]}) : integer_fmod(a[0], a[1]);
    case Op::Atan2: return libm("atan2f", "atan2", {a[0], a[1]});
    case Op::Hypot: return libm("hypotf", "hypot", {a[0], a[1]});
    case Op::Copysign: return copy_sign(a[0], a[1]);
    // Integers (int64 values) and bools only: the frontend refuses floats.
    case Op::BitAnd: return t.is_bool() ? a[0] && a[1] : a[0] & a[1];
    case Op::BitOr: return t.is_bool() ? a[0] || a[1] : a[0] | a[1];
    case Op::BitXor: return t.is_bool() ? a[0] != a[1] : a[0] ^ a[1];
    case Op::ShiftLeft: return shift(a[0], a[1], true);
    case Op::ShiftRight: return shift(a[0], a[1], false);
    case Op::BitNot: return t.is_bool() ? !a[0] : ~a[0];
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge: return lower_compare(n.op, a);
    case Op::Where: return select(a[0], a[1], a[2]);
    // Not elementwise: lower_kernel.cpp builds these as Funcs of their own (leaves, reductions, data
    // movement), never as an expression of their operands.
    case KILN_NOT_ELEMENTWISE_OPS: break;
  }
  throw Error(detail::concat("halide: ", ir::op_name(n.op), " is not an elementwise op"));
}

// A reducing node's initial value, and its update of `acc` by `x`.
Expr reduction_initial(const ir::Node& red) {
  const Type t = value_type(red.dtype);
  const float inf = std::numeric_limits<float>::infinity();
  switch (red.op) {
    case Op::Sum: return make_zero(t);
    case Op::Prod: return make_one(t);
    case Op::ReduceMax: return t.is_bool() ? const_false() : t.is_float() ? cast(t, Expr(-inf)) : t.min();
    case Op::ReduceMin: return t.is_bool() ? const_true() : t.is_float() ? cast(t, Expr(inf)) : t.max();
    default: break;
  }
  throw Error(detail::concat("halide: no lowering for reduction ", ir::op_name(red.op)));
}
Expr reduction_update(const ir::Node& red, Expr acc, Expr x) {
  const Type t = value_type(red.dtype);
  switch (red.op) {
    case Op::Sum: return acc + x;
    case Op::Prod: return acc * x;
    case Op::ReduceMax:  // NaN wins, as in PyTorch
      return t.is_bool() ? acc || x : t.is_float() ? select(x > acc || is_nan_value(x), x, acc) : max(acc, x);
    case Op::ReduceMin:
      return t.is_bool() ? acc && x : t.is_float() ? select(x < acc || is_nan_value(x), x, acc) : min(acc, x);
    default: break;
  }
  throw Error(detail::concat("halide: no lowering for reduction ", ir::op_name(red.op)));
}

}  // namespace kiln::codegen::halide
