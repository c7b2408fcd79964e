// lgamma, digamma, trigamma and erfinv, written once over a math policy M whose number type is
// either double (tracer/op_scalar.cpp: the interpreter and constant folding) or a float64
// Halide expression (codegen/halide/ops.cpp: float32 kernels compute in float64 and round once),
// so that every backend runs the same algorithm. No libm has digamma or erfinv, and libm's lgamma
// writes the global signgam (a data race in parallel kernels).
//
// M provides: select(cond, a, b), log, exp, sqrt, sin, cos, round, abs, erf, erfc, and the
// constants inf() and nan(); comparisons and arithmetic are the number type's own. Every branch
// is computed and selected, as a vector kernel would.
#pragma once
#include <cmath>

namespace kiln::special {

constexpr double kPi = 3.14159265358979323846;

// |sin(pi x)| through x's distance to the nearest integer (exact in floating point), so that it
// stays accurate for large |x| and is 0 exactly at integers.
template <class M, class T>
T abs_sin_pi(const T& x) {
  T d = M::abs(x - M::round(x));
  return M::sin(d * kPi);
}

// lgamma of y > 0 (or +inf): shifted by the recurrence lgamma(y) = lgamma(y + 8) - log(y (y + 1)
// ... (y + 7)) to z >= 8, where Stirling's series to 1/z^13 is within 1e-16 (Abramowitz and
// Stegun 6.1.41).
template <class M, class T>
T lgamma_positive(const T& y) {
  auto small = y < 8.0;
  T product = y;
  for (int i = 1; i < 8; ++i) product = product * (y + double(i));
  T z = M::select(small, y + 8.0, y);
  T shift = M::select(small, M::log(product), T(0.0));
  T zi = 1.0 / z, zi2 = zi * zi;
  T series =
      zi * (1.0 / 12 -
            zi2 * (1.0 / 360 -
                   zi2 * (1.0 / 1260 - zi2 * (1.0 / 1680 - zi2 * (1.0 / 1188 - zi2 * (691.0 / 360360 - zi2 / 156))))));
  return (z - 0.5) * M::log(z) - z + 0.91893853320467274178 + series - shift;
}

// lgamma(x): inf at 0, at the negative integers and at +-inf; below 0 by the reflection
// lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x).
template <class M, class T>
T lgamma(const T& x) {
  auto negative = x < 0.0;
  T positive = lgamma_positive<M>(M::select(negative, 1.0 - x, x));
  T reflected = M::log(kPi / abs_sin_pi<M>(x)) - positive;
  T value = M::select(negative, reflected, positive);
  return M::select(M::abs(x) == M::inf(x), M::inf(x), M::select(x == 1.0 || x == 2.0, T(0.0), value));
}

// digamma of y > 0: psi(y) = psi(y + 8) - sum 1/(y + i), and at z >= 8 the asymptotic series
// log z - 1/(2z) - sum B_2k / (2k z^2k) to z^-14 (Abramowitz and Stegun 6.3.18), within 1e-16.
template <class M, class T>
T digamma_positive(const T& y) {
  auto small = y < 8.0;
  T sum = 1.0 / y;
  for (int i = 1; i < 8; ++i) sum = sum + 1.0 / (y + double(i));
  T z = M::select(small, y + 8.0, y);
  T zi2 = 1.0 / (z * z);
  T series =
      zi2 *
      (1.0 / 12 - zi2 * (1.0 / 120 -
                         zi2 * (1.0 / 252 - zi2 * (1.0 / 240 - zi2 * (1.0 / 132 - zi2 * (691.0 / 32760 - zi2 / 12))))));
  return M::log(z) - 0.5 / z - series - M::select(small, sum, T(0.0));
}

// digamma(x) as libtorch: -inf at +0, inf at -0, NaN at the negative integers and -inf; below 0
// by the reflection psi(x) = psi(1 - x) - pi / tan(pi x).
template <class M, class T>
T digamma(const T& x) {
  auto negative = x < 0.0;
  T positive = digamma_positive<M>(M::select(negative, 1.0 - x, x));
  T d = x - M::round(x);  // tan(pi x) = tan(pi d)
  T reflected = positive - kPi * M::cos(d * kPi) / M::sin(d * kPi);
  T value = M::select(negative, M::select(d == 0.0, M::nan(x), reflected), positive);
  return M::select(x == 0.0, M::select(1.0 / x < 0.0, M::inf(x), -M::inf(x)), value);
}

// trigamma of y > 0: psi'(y) = psi'(y + 8) + sum 1/(y + i)^2, and at z >= 8 the asymptotic series
// 1/z + 1/(2z^2) + sum B_2k / z^(2k+1) to z^-15 (Abramowitz and Stegun 6.4.12), within 1e-15.
template <class M, class T>
T trigamma_positive(const T& y) {
  auto small = y < 8.0;
  T sum = 1.0 / (y * y);
  for (int i = 1; i < 8; ++i) sum = sum + 1.0 / ((y + double(i)) * (y + double(i)));
  T z = M::select(small, y + 8.0, y);
  T zi = 1.0 / z, zi2 = zi * zi;
  T series =
      zi * (1.0 +
            zi * (0.5 +
                  zi * (1.0 / 6 -
                        zi2 * (1.0 / 30 -
                               zi2 * (1.0 / 42 -
                                      zi2 * (1.0 / 30 - zi2 * (5.0 / 66 - zi2 * (691.0 / 2730 - zi2 * (7.0 / 6)))))))));
  return series + M::select(small, sum, T(0.0));
}

// trigamma(x); below 0 by the reflection psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x).
template <class M, class T>
T trigamma(const T& x) {
  auto negative = x < 0.0;
  T positive = trigamma_positive<M>(M::select(negative, 1.0 - x, x));
  T s = abs_sin_pi<M>(x);
  return M::select(negative, kPi * kPi / (s * s) - positive, positive);
}

// erfinv(y): Giles' single-precision approximation ("Approximating the erfinv function", GPU
// Computing Gems, 2011) refined by two Newton steps on erf (on erfc where |y| > 0.5, whose 1 - |y|
// is exact), which square its error each: within an ulp of float64. +-inf at +-1, NaN beyond.
template <class M, class T>
T erfinv(const T& y) {
  T a = M::abs(y);
  T w = -M::log((1.0 - a) * (1.0 + a));
  T wc = w - 2.5, wt = M::sqrt(w) - 3.0;
  T central = 2.81022636e-08;
  for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                   0.246640727, 1.50140941})
    central = central * wc + c;
  T tail = -0.000200214257;
  for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                   1.00167406, 2.83297682})
    tail = tail * wt + c;
  T t = M::select(w < 5.0, central, tail) * a;
  for (int step = 0; step < 2; ++step) {
    T residual = M::select(a > 0.5, (1.0 - a) - M::erfc(t), M::erf(t) - a);
    t = t - residual / (1.12837916709551257390 * M::exp(-(t * t)));
  }
  t = M::select(a == 0.0, a, M::select(a == 1.0, M::inf(y), M::select(a > 1.0, M::nan(y), t)));
  return M::select(y < 0.0, -t, M::select(y == 0.0, y, t));
}

// The policy for double, as tracer/op_scalar.cpp computes.
struct DoubleMath {
  static double select(bool c, double a, double b) { return c ? a : b; }
  static double log(double x) { return std::log(x); }
  static double exp(double x) { return std::exp(x); }
  static double sqrt(double x) { return std::sqrt(x); }
  static double sin(double x) { return std::sin(x); }
  static double cos(double x) { return std::cos(x); }
  static double round(double x) { return std::nearbyint(x); }
  static double abs(double x) { return std::fabs(x); }
  static double erf(double x) { return std::erf(x); }
  static double erfc(double x) { return std::erfc(x); }
  static double inf(double) { return HUGE_VAL; }
  static double nan(double) { return NAN; }
};

}  // namespace kiln::special
