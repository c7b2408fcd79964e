// The math ops libtorch users reach for (rounding, fmod and remainder, inverse trigonometric and
// hyperbolic functions, special functions, activations): values with libtorch's semantics at
// special values and on integers, float32 kernels within a few ulps of float64, float64
// gradients against finite differences, errors, and fused kernels against the interpreter.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.h"
#include "gradcheck.h"
#include "runtime/config.h"

namespace {

using kiln::Tensor;
using kiln::TensorList;
namespace F = torch::nn::functional;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A float64 tensor (torch::tensor of doubles is float32, libtorch's default dtype).
Tensor dt(std::initializer_list<double> values) { return torch::tensor(std::vector<double>(values), kiln::kDouble); }

// Same value, NaN equal to NaN, infinities equal and the sign of zero compared.
void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 0) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i], g = got[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": expected NaN, got " << g;
    } else if (std::isinf(e)) {
      EXPECT_EQ(g, e) << "element " << i;
    } else if (e == 0 && tol == 0) {
      EXPECT_TRUE(g == 0 && std::signbit(g) == std::signbit(e))
          << "element " << i << ": expected " << e << ", got " << g;
    } else {
      EXPECT_NEAR(g, e, tol * std::max(1.0, std::fabs(e))) << "element " << i;
    }
  }
}

TEST(MathOps, CopysignTakesTheSignBitOfZeroAndNaN) {
  Tensor a = dt({1.5, -2.0, 0.0, -0.0, kInf, kNaN, 3.0, -3.0});
  Tensor b = dt({-1.0, 2.0, -0.0, 1.0, -5.0, -1.0, kNaN, -kNaN});
  expect_values(torch::copysign(a, b), {-1.5, 2.0, -0.0, 0.0, -kInf, kNaN, 3.0, -3.0});
  EXPECT_TRUE(std::signbit(torch::copysign(dt({kNaN}), -1.0).item<double>()));
  // Float32 kernels, a number for b, in place, and integers computed in float32 (libtorch's).
  expect_values(torch::tensor({2.5f, -0.5f, 0.0f}).copysign(-2), {-2.5, -0.5, -0.0});
  Tensor y = torch::tensor({2.5f, -0.5f});
  y.copysign_(torch::tensor({-1.0f, 1.0f}));
  expect_values(y, {-2.5, 0.5});
  Tensor i = torch::copysign(torch::tensor({3, -4}), torch::tensor({-1, 1}));
  EXPECT_EQ(i.dtype(), kiln::kFloat);
  expect_values(i, {-3, 4});
}

TEST(MathOps, RoundingAtTiesAndSpecialValues) {
  Tensor x = dt({2.5, -2.5, 0.5, 1.5, -0.5, -0.0, kInf, kNaN, 1e30, -1.7});
  expect_values(x.round(), {2, -2, 0, 2, -0.0, -0.0, kInf, kNaN, 1e30, -2});
  expect_values(torch::floor(x), {2, -3, 0, 1, -1, -0.0, kInf, kNaN, 1e30, -2});
  expect_values(x.ceil(), {3, -2, 1, 2, -0.0, -0.0, kInf, kNaN, 1e30, -1});
  expect_values(x.trunc(), {2, -2, 0, 1, -0.0, -0.0, kInf, kNaN, 1e30, -1});
  expect_values(dt({2.5, -2.5, -0.25}).frac(), {0.5, -0.5, -0.25});
  // In place, and float32 kernels (the same program with another dtype).
  Tensor y = torch::tensor({2.5f, -0.5f, 3.7f});
  y.round_();
  expect_values(y, {2, -0.0, 4});
}

TEST(MathOps, RoundingIntegersIsTheIdentity) {
  const int64_t big = (int64_t(1) << 62) + 1;
  Tensor x = torch::tensor(std::vector<int64_t>{big, -3, 7});
  for (const Tensor& r : {x.floor(), x.ceil(), x.round(), x.trunc()}) {
    EXPECT_EQ(r.dtype(), kiln::kLong);
    EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{big, -3, 7}));
  }
  EXPECT_THROW_WITH(x.frac(), "frac");
}

TEST(MathOps, FmodAndRemainderSigns) {
  Tensor a = dt({-7.0, 7.0, -7.0, 6.0, 5.5, -0.0}), b = dt({3.0, -3.0, -3.0, -3.0, 2.0, 3.0});
  expect_values(torch::fmod(a, b), {-1, 1, -1, 0, 1.5, -0.0});
  expect_values(torch::remainder(a, b), {2, -2, -1, 0, 1.5, -0.0});
  expect_values(a.fmod(2.0), {-1, 1, -1, 0, 1.5, -0.0});
  expect_values(a.remainder(-2.0), {-1, -1, -1, 0, -0.5, -0.0});
  expect_values(torch::fmod(dt({1.0, kInf, 1.0}), dt({0.0, 2.0, kInf})), {kNaN, kNaN, 1});
  // int64: exact beyond 2^53, truncated (fmod) and floored (remainder) as libtorch.
  const int64_t big = (int64_t(1) << 62) + 3;
  Tensor ia = torch::tensor(std::vector<int64_t>{big, -7, 7, -7}),
         ib = torch::tensor(std::vector<int64_t>{2, 3, -3, -3});
  EXPECT_EQ(torch::fmod(ia, ib).dtype(), kiln::kLong);
  EXPECT_EQ(torch::fmod(ia, ib).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1}));
  EXPECT_EQ(torch::remainder(ia, ib).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -2, -1}));
  Tensor c = ia.clone();
  c.remainder_(5);
  EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{big % 5, 3, 2, 3}));
}

TEST(MathOps, SpecialFunctionsAtSpecialValues) {
  expect_values(torch::lgamma(dt({0.0, -1.0, 1.0, 2.0, -0.5, kInf, -kInf, kNaN})),
                {kInf, kInf, 0, 0, 1.2655121234846454, kInf, kInf, kNaN}, 1e-14);
  expect_values(torch::digamma(dt({0.0, -0.0, -1.0, 1.0, 0.5, -0.5, kInf})),
                {-kInf, kInf, kNaN, -0.57721566490153286, -1.9635100260214235, 0.03648997397857652, kInf}, 1e-13);
  expect_values(torch::polygamma(1, dt({1.0, 0.5, -0.5, 10.0})),
                {1.6449340668482264, 4.934802200544679, 8.934802200544679, 0.10516633568168575}, 1e-12);
  // erfinv at the double nearest 0.999999 (its slope there is 1.4e5).
  expect_values(torch::erfinv(dt({1.0, -1.0, 0.5, -0.0, 2.0, 0.999999, -1e-300})),
                {kInf, -kInf, 0.47693627620446987, -0.0, kNaN, 3.4589107372754988, -8.86226925452758e-301}, 1e-13);
  expect_values(torch::erfc(dt({10.0, -kInf, 0.0})), {2.088487583762545e-45, 2, 1}, 1e-14);
  expect_values(torch::expm1(dt({1e-10, -kInf})), {1.00000000005e-10, -1}, 1e-14);
  expect_values(torch::exp2(dt({10.0, -1.0})), {1024, 0.5});
  expect_values(torch::atan2(dt({0.0, -0.0, 1.0}), dt({-1.0, -1.0, 0.0})), {M_PI, -M_PI, M_PI / 2});
  expect_values(torch::hypot(dt({3e300, kInf}), dt({4e300, kNaN})), {5e300, kInf}, 1e-15);
  expect_values(torch::logaddexp(dt({-kInf, kInf, 1000.0}), dt({-kInf, kInf, 1000.0})), {-kInf, kInf, 1000 + M_LN2},
                1e-15);
}

TEST(MathOps, TestsOfValuesAndNanToNum) {
  Tensor x = dt({1.0, kNaN, kInf, -kInf, -0.0});
  EXPECT_EQ(x.isnan().to_vector<bool>(), (std::vector<bool>{false, true, false, false, false}));
  EXPECT_EQ(torch::isinf(x).to_vector<bool>(), (std::vector<bool>{false, false, true, true, false}));
  EXPECT_EQ(x.isfinite().to_vector<bool>(), (std::vector<bool>{true, false, false, false, true}));
  Tensor i = torch::tensor(std::vector<int64_t>{1, 2});
  EXPECT_EQ(i.isnan().dtype(), kiln::kBool);
  EXPECT_EQ(i.isnan().to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(i.isfinite().to_vector<bool>(), (std::vector<bool>{true, true}));
  expect_values(x.nan_to_num(),
                {1, 0, std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), -0.0});
  expect_values(torch::nan_to_num(x.to(kiln::kFloat), 2.0, 3.0, -4.0), {1, 2, 3, -4, -0.0});
  expect_values(torch::nan_to_num(x.to(kiln::kFloat)),
                {1, 0, std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(), -0.0});
}

TEST(MathOps, IntegerInputsComputeInFloat32) {
  Tensor i = torch::tensor(std::vector<int64_t>{1, 4});
  EXPECT_EQ(i.atan().dtype(), kiln::kFloat);
  EXPECT_EQ(torch::atan2(i, i).dtype(), kiln::kFloat);
  expect_values(torch::log10(torch::tensor(std::vector<int64_t>{100})), {2}, 1e-6);
}

TEST(MathOps, ActivationsAsLibtorch) {
  Tensor x = dt({-4.0, -3.0, -1.0, 0.0, 0.5, 3.0, 7.0});
  const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
  auto elu_ref = [](double v, double alpha) { return v > 0 ? v : alpha * std::expm1(v); };
  std::vector<double> elu2, selu, celu, hardswish, mish;
  for (double v : x.to_vector<double>()) {
    elu2.push_back(elu_ref(v, 2.0));
    selu.push_back(s * elu_ref(v, a));
    celu.push_back(v > 0 ? v : 0.5 * std::expm1(v / 0.5));
    hardswish.push_back(v * std::min(std::max(v + 3, 0.0), 6.0) / 6);
    mish.push_back(v * std::tanh(std::log1p(std::exp(v))));
  }
  expect_values(F::elu(x, F::ELUFuncOptions().alpha(2.0)), elu2, 1e-15);
  expect_values(torch::nn::SELU()(x), selu, 1e-15);
  expect_values(F::celu(x, F::CELUFuncOptions().alpha(0.5)), celu, 1e-15);
  expect_values(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.1)), {-0.4, -0.3, -0.1, 0, 0.5, 3, 7},
                1e-15);
  expect_values(torch::leaky_relu(x, 0.1), {-0.4, -0.3, -0.1, 0, 0.5, 3, 7}, 1e-15);
  expect_values(F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(2)), {-2, -2, -1, 0, 0.5, 2, 2});
  expect_values(torch::nn::ReLU6()(x), {0, 0, 0, 0, 0.5, 3, 6});
  expect_values(torch::nn::Hardsigmoid()(x), {0, 0, 1.0 / 3, 0.5, 3.5 / 6, 1, 1}, 1e-15);
  expect_values(torch::nn::Hardswish()(x), hardswish, 1e-15);
  expect_values(torch::nn::Mish()(x), mish, 1e-15);
  expect_values(torch::nn::Softsign()(x), {-0.8, -0.75, -0.5, 0, 1.0 / 3, 0.75, 0.875}, 1e-15);
  expect_values(torch::nn::ELU(torch::nn::ELUOptions().alpha(2.0))(x), elu2, 1e-15);
  expect_values(torch::nn::CELU(torch::nn::CELUOptions().alpha(0.5))(x), celu, 1e-15);
  expect_values(torch::nn::Hardtanh()(x), {-1, -1, -1, 0, 0.5, 1, 1});
  // inplace options write into the input.
  Tensor y = x.clone();
  F::relu6(y, F::ReLU6FuncOptions(true));
  expect_values(y, {0, 0, 0, 0, 0.5, 3, 6});
  std::ostringstream os;
  os << *torch::nn::ELU(torch::nn::ELUOptions().alpha(2.0)) << " " << *torch::nn::Hardtanh();
  EXPECT_EQ(os.str(), "kiln::nn::ELU(alpha=2) kiln::nn::Hardtanh(min_val=-1, max_val=1)");
}

TEST(MathOps, LerpAndLogit) {
  Tensor a = dt({1.0, 2.0, 3.0}), b = dt({5.0, -2.0, 3.0}), w = dt({0.25, 1.0, 0.7});
  expect_values(torch::lerp(a, b, w), {2, -2, 3}, 1e-15);
  expect_values(a.lerp(b, 0.5), {3, 0, 3}, 1e-15);
  Tensor c = a.clone();
  c.lerp_(b, w);
  expect_values(c, {2, -2, 3}, 1e-15);
  expect_values(torch::logit(dt({0.5, 0.0, 0.75})), {0, -kInf, std::log(3.0)}, 1e-15);
  expect_values(dt({0.0, 1.0}).logit(0.25), {std::log(1.0 / 3), std::log(3.0)}, 1e-15);
}

// --- float32 accuracy: each op's float32 kernel against float64 on a grid of its domain ---

// The largest error over `xs` of op in float32 against op in float64, in float32 ulps of the
// float64 result.
double worst_ulps(const std::function<Tensor(const Tensor&)>& op, const std::vector<double>& xs, double* where) {
  Tensor x32 = torch::tensor(xs, kiln::kDouble).to(kiln::kFloat);
  std::vector<double> x_rounded = x32.to_vector<double>();
  std::vector<double> got = op(x32).to_vector<double>(),
                      want = op(torch::tensor(x_rounded, kiln::kDouble)).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (std::isinf(want[i]) && got[i] == want[i]) continue;
    const float w = float(want[i]);
    const double ulp = double(std::nextafter(std::fabs(w), INFINITY)) - std::fabs(w);
    const double e = std::fabs(got[i] - want[i]) / ulp;
    if (!(e <= worst)) {
      worst = e;
      *where = x_rounded[i];
    }
  }
  return worst;
}

std::vector<double> grid(double lo, double hi, int n = 4001) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

TEST(MathOps, Float32KernelsWithinAFewUlps) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::vector<double> xs;
    double ulps;
  };
  std::vector<double> tiny = grid(-1e-3, 1e-3), wide = grid(-30, 30);
  std::vector<double> positive_gamma = grid(0.01, 30);        // lgamma's roots are at 1 and 2, returned exactly
  std::vector<double> negative_gamma = grid(-4.9, -0.1, 97);  // away from lgamma's sign changes
  const std::vector<Case> cases = {
      {"atan", [](const Tensor& x) { return x.atan(); }, wide, 2},
      {"asin", [](const Tensor& x) { return x.asin(); }, grid(-1, 1), 2},
      {"acos", [](const Tensor& x) { return x.acos(); }, grid(-1, 1), 2},
      {"sinh", [](const Tensor& x) { return x.sinh(); }, grid(-80, 80), 2},
      {"cosh", [](const Tensor& x) { return x.cosh(); }, grid(-80, 80), 2},
      {"asinh", [](const Tensor& x) { return x.asinh(); }, wide, 2},
      {"acosh", [](const Tensor& x) { return x.acosh(); }, grid(1, 1e4), 2},
      {"atanh", [](const Tensor& x) { return x.atanh(); }, grid(-0.999, 0.999), 2},
      {"expm1", [](const Tensor& x) { return x.expm1(); }, tiny, 2},
      {"expm1 wide", [](const Tensor& x) { return x.expm1(); }, grid(-80, 80), 2},
      {"exp2", [](const Tensor& x) { return x.exp2(); }, grid(-140, 127), 2},
      {"erfc", [](const Tensor& x) { return x.erfc(); }, grid(-5, 9), 4},
      {"erfinv", [](const Tensor& x) { return x.erfinv(); }, grid(-1, 1), 2},
      {"lgamma", [](const Tensor& x) { return x.lgamma(); }, positive_gamma, 3},
      {"lgamma negative", [](const Tensor& x) { return x.lgamma(); }, negative_gamma, 3},
      {"digamma", [](const Tensor& x) { return x.digamma(); }, grid(0.01, 30), 3},
      {"digamma negative", [](const Tensor& x) { return x.digamma(); }, grid(-4.95, -0.05, 100), 3},
      {"trigamma", [](const Tensor& x) { return torch::polygamma(1, x); }, grid(-4.95, 30, 3501), 3},
      {"log10", [](const Tensor& x) { return x.log10(); }, grid(0.5, 1e6), 3},
  };
  for (const auto& c : cases) {
    double at = 0;
    const double ulps = worst_ulps(c.op, c.xs, &at);
    EXPECT_LE(ulps, c.ulps) << c.name << " is " << ulps << " ulps off at " << at;
  }
  // atan2, hypot and fmod over a grid of pairs: within an ulp (fmod exactly).
  std::vector<double> a = grid(-5, 5, 101), b;
  std::vector<double> pa, pb;
  for (double x : a)
    for (double y : a) pa.push_back(x), pb.push_back(y);
  for (auto op : {+[](const Tensor&x, const Tensor&y) { return torch::atan2(x, y); },
                  +[](const Tensor&x, const Tensor&y) { return torch::hypot(x, y); },
                  +[](const Tensor&x, const Tensor&y) { return torch::fmod(x, y); }}) {
    Tensor x32 = torch::tensor(pa).to(kiln::kFloat), y32 = torch::tensor(pb).to(kiln::kFloat);
    std::vector<double> got = op(x32, y32).to_vector<double>(),
                        want = op(x32.to(kiln::kDouble), y32.to(kiln::kDouble)).to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) continue;
      const float w = float(want[i]);
      ASSERT_LE(std::fabs(got[i] - w), double(std::nextafter(std::fabs(w), INFINITY)) - std::fabs(w))
          << pa[i] << ", " << pb[i];
    }
  }
}

// --- gradients (float64, finite differences) ---

TEST(MathOps, GradientsMatchFiniteDifferences) {
  using gradcheck::uniform;
  struct Case {
    const char* name;
    gradcheck::Fn f;
    TensorList inputs;
    bool gradgrad = true;
  };
  auto u = [](double lo, double hi) { return uniform({2, 3}, lo, hi); };
  const std::vector<Case> cases = {
      {"floor", [](const TensorList& t) { return t[0].floor() + t[0]; }, {u(-3, 3)}},
      {"ceil", [](const TensorList& t) { return t[0].ceil() * t[0]; }, {u(0.1, 0.9)}},
      {"round", [](const TensorList& t) { return t[0].round() + t[0]; }, {u(0.6, 1.4)}},
      {"trunc", [](const TensorList& t) { return t[0].trunc() + t[0]; }, {u(0.1, 0.9)}},
      {"frac", [](const TensorList& t) { return t[0].frac(); }, {u(0.1, 0.9)}},
      {"fmod", [](const TensorList& t) { return torch::fmod(t[0], t[1]); }, {u(2.1, 2.9), u(1.1, 1.4)}},
      {"remainder", [](const TensorList& t) { return torch::remainder(t[0], t[1]); }, {u(-2.9, -2.1), u(1.1, 1.4)}},
      {"remainder scalar", [](const TensorList& t) { return t[0].remainder(-1.5); }, {u(0.1, 1.4)}},
      {"atan", [](const TensorList& t) { return t[0].atan(); }, {u(-3, 3)}},
      {"atan2", [](const TensorList& t) { return torch::atan2(t[0], t[1]); }, {u(-2, 2), u(0.5, 2)}},
      {"asin", [](const TensorList& t) { return t[0].asin(); }, {u(-0.9, 0.9)}},
      {"acos", [](const TensorList& t) { return t[0].acos(); }, {u(-0.9, 0.9)}},
      {"sinh", [](const TensorList& t) { return t[0].sinh(); }, {u(-2, 2)}},
      {"cosh", [](const TensorList& t) { return t[0].cosh(); }, {u(-2, 2)}},
      {"asinh", [](const TensorList& t) { return t[0].asinh(); }, {u(-2, 2)}},
      {"acosh", [](const TensorList& t) { return t[0].acosh(); }, {u(1.2, 3)}},
      {"atanh", [](const TensorList& t) { return t[0].atanh(); }, {u(-0.9, 0.9)}},
      {"expm1", [](const TensorList& t) { return t[0].expm1(); }, {u(-2, 2)}},
      {"exp2", [](const TensorList& t) { return t[0].exp2(); }, {u(-2, 2)}},
      {"log2", [](const TensorList& t) { return t[0].log2(); }, {u(0.5, 3)}},
      {"log10", [](const TensorList& t) { return t[0].log10(); }, {u(0.5, 3)}},
      {"erfc", [](const TensorList& t) { return t[0].erfc(); }, {u(-2, 2)}},
      {"erfinv", [](const TensorList& t) { return t[0].erfinv(); }, {u(-0.9, 0.9)}},
      {"lgamma", [](const TensorList& t) { return t[0].lgamma(); }, {u(0.2, 5)}},
      {"lgamma negative", [](const TensorList& t) { return t[0].lgamma(); }, {u(-0.9, -0.1)}},
      {"digamma", [](const TensorList& t) { return t[0].digamma(); }, {u(0.2, 5)}, false},
      {"hypot", [](const TensorList& t) { return torch::hypot(t[0], t[1]); }, {u(0.5, 2), u(-2, -0.5)}},
      {"copysign",
       [](const TensorList& t) { return torch::copysign(t[0], t[1]); },
       {gradcheck::away_from_zero({2, 3}), gradcheck::away_from_zero({2, 3})}},
      {"logaddexp", [](const TensorList& t) { return torch::logaddexp(t[0], t[1]); }, {u(-2, 2), u(-2, 2)}},
      {"lerp", [](const TensorList& t) { return torch::lerp(t[0], t[1], t[2]); }, {u(-2, 2), u(-2, 2), u(0, 1)}},
      {"logit", [](const TensorList& t) { return t[0].logit(); }, {u(0.1, 0.9)}},
      {"logit eps", [](const TensorList& t) { return t[0].logit(0.05); }, {u(0.1, 0.9)}},
      {"nan_to_num", [](const TensorList& t) { return t[0].nan_to_num(); }, {u(-2, 2)}},
      {"elu", [](const TensorList& t) { return torch::elu(t[0], 1.5); }, {gradcheck::away_from_zero({2, 3})}},
      {"selu", [](const TensorList& t) { return torch::selu(t[0]); }, {gradcheck::away_from_zero({2, 3})}},
      {"celu", [](const TensorList& t) { return torch::celu(t[0], 0.7); }, {gradcheck::away_from_zero({2, 3})}},
      {"leaky_relu",
       [](const TensorList& t) { return torch::leaky_relu(t[0], 0.2); },
       {gradcheck::away_from_zero({2, 3})}},
      {"hardtanh", [](const TensorList& t) { return torch::hardtanh(t[0], -0.5, 0.5); }, {u(-0.45, 0.45)}},
      {"relu6", [](const TensorList& t) { return torch::relu6(t[0]); }, {u(0.1, 5.9)}},
      {"hardsigmoid", [](const TensorList& t) { return torch::hardsigmoid(t[0]); }, {u(-2.9, 2.9)}},
      {"hardswish", [](const TensorList& t) { return torch::hardswish(t[0]); }, {u(-2.9, 2.9)}},
      {"mish", [](const TensorList& t) { return torch::mish(t[0]); }, {u(-3, 3)}},
      {"softsign", [](const TensorList& t) { return F::softsign(t[0]); }, {gradcheck::away_from_zero({2, 3})}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    gradcheck::Options o;
    o.gradgrad = c.gradgrad;
    EXPECT_TRUE(gradcheck::check(c.f, c.inputs, o)) << c.name;
  }
}

TEST(MathOps, GradientsAtTheEdgesAsLibtorch) {
  // hardtanh (and relu6) pass no gradient at their bounds; floor-like ops none at all.
  Tensor x = dt({-1.0, 1.0, 0.0, 0.5}).requires_grad_();
  torch::hardtanh(x).sum().backward();
  expect_values(x.grad(), {0, 0, 1, 1});
  Tensor y = dt({0.0, 6.0, 3.0}).requires_grad_();
  torch::relu6(y).sum().backward();
  expect_values(y.grad(), {0, 0, 1});
  // remainder's gradient for the divisor is -floor(a / b); fmod's -trunc(a / b).
  Tensor a = dt({-7.0, 7.0}).requires_grad_(), b = dt({3.0, 3.0}).requires_grad_();
  torch::remainder(a, b).sum().backward();
  expect_values(a.grad(), {1, 1});
  expect_values(b.grad(), {3, -2});
  EXPECT_EQ(torch::floor(a).grad_fn()->name(), "FloorBackward0");
  EXPECT_EQ(torch::remainder(a, b).grad_fn()->name(), "RemainderBackward0");
  // copysign passes no gradient to the sign's source, nor to a at 0.
  Tensor c = dt({-2.0, 0.0, 3.0}).requires_grad_(), s = dt({1.0, -1.0, -1.0}).requires_grad_();
  Tensor cs = torch::copysign(c, s);
  EXPECT_EQ(cs.grad_fn()->name(), "CopysignBackward0");
  cs.sum().backward();
  expect_values(c.grad(), {-1, 0, -1});
  expect_values(s.grad(), {0, 0, 0});
  // digamma's second derivative (polygamma(2, x)) is not implemented: said so, not zero.
  Tensor z = dt({1.5}).requires_grad_();
  Tensor g = torch::autograd::grad({torch::digamma(z).sum()}, {z}, {}, true, true)[0];
  EXPECT_THROW_WITH(g.sum().backward(), "polygamma");
}

TEST(MathOps, BadInputsNameTheOpAndShapes) {
  EXPECT_THROW_WITH(torch::atan2(torch::ones({2, 3}), torch::ones({4})), "atan2");
  EXPECT_THROW_WITH(torch::atan2(torch::ones({2, 3}), torch::ones({4})), "[2, 3]");
  EXPECT_THROW_WITH(torch::fmod(torch::ones({2}), torch::ones({3})), "fmod");
  EXPECT_THROW_WITH(torch::hypot(torch::ones({2}), torch::ones({3})), "[3]");
  EXPECT_THROW_WITH(torch::copysign(torch::ones({2, 2}), torch::ones({3})), "copysign");
  EXPECT_THROW_WITH(torch::copysign(torch::ones({2, 2}), torch::ones({3})), "[2, 2]");
  EXPECT_THROW_WITH(torch::remainder(torch::ones({5}), torch::ones({3})), "[5]");
  EXPECT_THROW_WITH(torch::lerp(torch::ones({2}), torch::ones({2}), torch::ones({3})), "[3]");
  EXPECT_THROW_WITH(torch::hardtanh(torch::ones({2}), 1, -1), "hardtanh");
  EXPECT_THROW_WITH(torch::polygamma(2, torch::ones({2})), "polygamma");
  EXPECT_THROW_WITH(torch::celu(torch::ones({2}), 0.0), "celu");
  EXPECT_THROW_WITH(torch::mish(torch::ones({2}, kiln::kLong)), "mish");
}

// --- fused kernels against the interpreter ---

std::vector<double> on_backend(const std::string& backend, const std::function<Tensor()>& program) {
  const std::string saved = kiln::config().backend;
  kiln::config().backend = backend;
  std::vector<double> out = program().to_vector<double>();
  kiln::config().backend = saved;
  return out;
}

TEST(MathOps, FusedKernelsMatchTheInterpreter) {
  for (kiln::ScalarType dtype : {kiln::kFloat, kiln::kDouble}) {
    auto program = [dtype] {
      Tensor x = (torch::arange(-40, 40, kiln::TensorOptions(dtype)) * 0.13).reshape({8, 10});
      Tensor y = x.t().contiguous().reshape({8, 10}) + 0.3;
      Tensor p = x.abs() + 0.25;
      TensorList parts = {x.floor(),
                          x.round(),
                          x.ceil() - x.trunc(),
                          x.frac(),
                          torch::fmod(x, y),
                          torch::remainder(x, y),
                          x.atan(),
                          torch::atan2(x, y),
                          (x * 0.1).asin() + (x * 0.1).acos(),
                          x.sinh() - x.cosh(),
                          x.asinh(),
                          (p + 1).acosh(),
                          (x * 0.1).atanh(),
                          x.expm1(),
                          x.exp2(),
                          p.log2(),
                          p.log10(),
                          x.erfc(),
                          (x * 0.12).erfinv(),
                          p.lgamma(),
                          p.digamma(),
                          torch::polygamma(1, p),
                          torch::hypot(x, y),
                          torch::copysign(x, y),
                          torch::logaddexp(x, y),
                          torch::lerp(x, y, p * 0.1),
                          (p * 0.1).logit(),
                          torch::elu(x),
                          torch::selu(x),
                          torch::celu(x, 0.5),
                          torch::leaky_relu(x),
                          torch::hardtanh(x),
                          torch::relu6(x),
                          torch::hardsigmoid(x),
                          torch::hardswish(x),
                          torch::mish(x),
                          F::softsign(x),
                          x.isfinite().to(dtype),
                          (x / 0).nan_to_num()};
      return torch::stack(parts);
    };
    std::vector<double> interp = on_backend("interp", program), fused = on_backend("halide", program);
    ASSERT_EQ(interp.size(), fused.size());
    const double tol = dtype == kiln::kFloat ? 1e-5 : 1e-12;
    for (size_t i = 0; i < interp.size(); ++i) {
      if (std::isnan(interp[i]) && std::isnan(fused[i])) continue;
      EXPECT_NEAR(fused[i], interp[i], tol * std::max(1.0, std::fabs(interp[i])))
          << "part " << i / 80 << " element " << i % 80 << " in " << dtype;
    }
  }
}

}  // namespace
