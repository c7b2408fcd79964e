// Forward values of ops against hand-computed expectations; dtype promotion and inference;
// reading values; reductions, linear algebra, indexing and views. Printing and random numbers:
// ops_print_random_test.cpp; differences from libtorch found by running both: libtorch_parity_test.cpp.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "ops_test_util.h"

namespace {

namespace ns = kiln;  // the reference tables below were produced with ns = torch
using kiln::Tensor;

using ops_test::near;
using ops_test::vals;

// --- elementwise ---

TEST(OpsUnary, Values) {
  const std::vector<double> xs = {-2.0, -0.5, 0.25, 0.5, 2.0};
  Tensor x = kiln::tensor(xs, kiln::kDouble);
  auto expect = [&](const char* name, const Tensor& got, double (*f)(double)) {
    std::vector<double> e;
    for (double v : xs) e.push_back(f(v));
    EXPECT_TRUE(near(got, e, 1e-12)) << name;
    EXPECT_EQ(got.dtype(), kiln::kDouble) << name;
  };
  expect("neg", -x, [](double v) { return -v; });
  expect("abs", x.abs(), [](double v) { return std::fabs(v); });
  expect("exp", x.exp(), [](double v) { return std::exp(v); });
  expect("sin", kiln::sin(x), [](double v) { return std::sin(v); });
  expect("cos", x.cos(), [](double v) { return std::cos(v); });
  expect("tanh", x.tanh(), [](double v) { return std::tanh(v); });
  expect("sigmoid", x.sigmoid(), [](double v) { return 1 / (1 + std::exp(-v)); });
  expect("relu", x.relu(), [](double v) { return v > 0 ? v : 0.0; });
  expect("gelu", x.gelu(), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  expect("gelu tanh", x.gelu("tanh"),
         [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); });
  expect("silu", x.silu(), [](double v) { return v / (1 + std::exp(-v)); });
  expect("erf", x.erf(), [](double v) { return std::erf(v); });
  expect("sign", x.sign(), [](double v) { return v > 0 ? 1.0 : -1.0; });
  expect("square", x.square(), [](double v) { return v * v; });
  expect("reciprocal", x.reciprocal(), [](double v) { return 1 / v; });
  expect("pow 3", x.pow(3), [](double v) { return v * v * v; });
  expect("clamp", x.clamp(-1, 0.4), [](double v) { return std::min(std::max(v, -1.0), 0.4); });
  expect("clamp_min", kiln::clamp_min(x, 0), [](double v) { return std::max(v, 0.0); });
  expect("clamp_max", x.clamp_max(0), [](double v) { return std::min(v, 0.0); });
  Tensor p = x.abs();
  auto expect_pos = [&](const char* name, const Tensor& got, double (*f)(double)) {
    std::vector<double> e;
    for (double v : xs) e.push_back(f(std::fabs(v)));
    EXPECT_TRUE(near(got, e, 1e-12)) << name;
  };
  expect_pos("log", p.log(), [](double v) { return std::log(v); });
  expect_pos("log1p", p.log1p(), [](double v) { return std::log1p(v); });
  expect_pos("log2", p.log2(), [](double v) { return std::log2(v); });
  expect_pos("sqrt", p.sqrt(), [](double v) { return std::sqrt(v); });
  expect_pos("rsqrt", p.rsqrt(), [](double v) { return 1 / std::sqrt(v); });
  expect_pos("pow 2.5", p.pow(2.5), [](double v) { return std::pow(v, 2.5); });
  expect_pos("2 ** x", kiln::pow(2, p), [](double v) { return std::pow(2.0, v); });
}

TEST(OpsUnary, KnownConstants) {
  Tensor one = kiln::tensor({1.0});
  EXPECT_TRUE(near(one.gelu(), {0.8413447460685429}));
  EXPECT_TRUE(near(one.gelu("tanh"), {0.8411919906082768}));
  EXPECT_TRUE(near(one.silu(), {0.7310585786300049}));
  EXPECT_TRUE(near(one.sigmoid(), {0.7310585786300049}));
  EXPECT_TRUE(near(kiln::tensor({8.0}).log2(), {3.0}));
  EXPECT_TRUE(near(kiln::tensor({0.0}).sign(), {0.0}));
  // Extreme inputs stay finite where PyTorch's do.
  EXPECT_TRUE(near(kiln::tensor({-100.0, 100.0}).sigmoid(), {0.0, 1.0}));
  EXPECT_TRUE(near(kiln::tensor({-1000.0, 1000.0}).tanh(), {-1.0, 1.0}));
}

TEST(OpsBinary, Broadcasting) {
  Tensor a = kiln::tensor({1.0, 2.0}).reshape({2, 1});
  Tensor b = kiln::tensor({10.0, 20.0, 30.0});  // [3]
  EXPECT_SHAPE(a + b, 2, 3);
  EXPECT_TRUE(near(a + b, {11, 21, 31, 12, 22, 32}));
  EXPECT_TRUE(near(b - a, {9, 19, 29, 8, 18, 28}));
  EXPECT_TRUE(near(a * b, {10, 20, 30, 20, 40, 60}));
  EXPECT_TRUE(near(b / a, {10, 20, 30, 5, 10, 15}));
  EXPECT_TRUE(near(a.pow(kiln::tensor({1.0, 2.0, 3.0})), {1, 1, 1, 2, 4, 8}));
  EXPECT_TRUE(near(kiln::maximum(a * 15, b), {15, 20, 30, 30, 30, 30}));
  EXPECT_TRUE(near(kiln::minimum(a * 15, b), {10, 15, 15, 10, 20, 30}));
  EXPECT_TRUE(near(kiln::add(a, b, 2), {21, 41, 61, 22, 42, 62}));
  EXPECT_TRUE(near(a.sub(b, 0.5), {-4, -9, -14, -3, -8, -13}));
  // Three-way broadcast: [2,1,3] with [4,1].
  Tensor c = kiln::ones({2, 1, 3}) + kiln::arange(4, kiln::kFloat).reshape({4, 1});
  EXPECT_SHAPE(c, 2, 4, 3);
  EXPECT_TRUE(near(c.sum({0, 2}), {6, 12, 18, 24}));
  EXPECT_EQ(kiln::broadcast_shapes({2, 1, 3}, {4, 1}), (std::vector<int64_t>{2, 4, 3}));
}

TEST(OpsBinary, ScalarOperands) {
  Tensor x = kiln::tensor({1.0, 2.0, 4.0});
  EXPECT_TRUE(near(x + 1, {2, 3, 5}));
  EXPECT_TRUE(near(1 + x, {2, 3, 5}));
  EXPECT_TRUE(near(x - 1, {0, 1, 3}));
  EXPECT_TRUE(near(1 - x, {0, -1, -3}));
  EXPECT_TRUE(near(x * 2, {2, 4, 8}));
  EXPECT_TRUE(near(2 * x, {2, 4, 8}));
  EXPECT_TRUE(near(x / 2, {0.5, 1, 2}));
  EXPECT_TRUE(near(2 / x, {2, 1, 0.5}));
  EXPECT_TRUE(near(x.add(1, 3), {4, 5, 7}));
  EXPECT_TRUE(near(x.sub(1, 3), {-2, -1, 1}));
  EXPECT_TRUE(near(kiln::where(x > 1.5, x, 0), {0, 2, 4}));
  EXPECT_TRUE(near(kiln::where(x > 1.5, -1, x), {1, -1, -1}));
  EXPECT_TRUE(near(x.masked_fill(x == 2, 7.5), {1, 7.5, 4}));
  EXPECT_TRUE(near(kiln::lerp(x, kiln::zeros({3}), 0.25), {0.75, 1.5, 3}));
  EXPECT_TRUE(near(kiln::addcmul(x, x, x, 0.5), {1.5, 4, 12}));
  EXPECT_TRUE(near(kiln::addcdiv(x, x, x * 2, 2), {2, 3, 5}));
  EXPECT_TRUE(kiln::allclose(x, x + 1e-9));
  EXPECT_FALSE(kiln::allclose(x, x + 1e-3));
  EXPECT_TRUE(kiln::equal(x, kiln::tensor({1.0, 2.0, 4.0})));
  EXPECT_FALSE(kiln::equal(x, kiln::tensor({1.0, 2.0})));
}

TEST(OpsBinary, ComparisonsAndLogic) {
  Tensor x = kiln::tensor({1, 2, 3});
  EXPECT_EQ((x < 2).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((x <= 2).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((x > 2).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((x >= 2).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((x == 2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((x != 2).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(x.eq(kiln::tensor({1, 0, 3})).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ((x < 2.5).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  Tensor a = x > 1, b = x < 3;
  EXPECT_EQ((a && b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((a || b).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ((~a).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(kiln::logical_not(x - 2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((a & b).dtype(), kiln::kBool);
}

// --- dtypes: promotion and inference, as in PyTorch ---

TEST(OpsDtype, Promotion) {
  Tensor i = kiln::tensor({1, 2});        // int64
  Tensor f = kiln::tensor({1.5f, 2.5f});  // float32
  Tensor d = kiln::tensor({1.0, 2.0}, kiln::kDouble);
  Tensor b = kiln::tensor({true, false});
  struct Expect {
    const char* what;
    Tensor t;
    kiln::ScalarType dtype;
  };
  const std::vector<Expect> cases = {
      {"int * 2.5", i * 2.5, kiln::kFloat},
      {"int * 2", i * 2, kiln::kLong},
      {"int + 1", i + 1, kiln::kLong},
      {"int - 1", i - 1, kiln::kLong},
      {"1 - int", 1 - i, kiln::kLong},
      {"int.add(1, 2)", i.add(1, 2), kiln::kLong},
      {"int / int", i / i, kiln::kFloat},
      {"int / 2", i / 2, kiln::kFloat},
      {"bool + bool", b + b, kiln::kBool},
      {"bool * bool", b * b, kiln::kBool},
      {"int + bool", i + b, kiln::kLong},
      {"bool + 1", b + 1, kiln::kLong},
      {"bool * 1.5", b * 1.5, kiln::kFloat},
      {"int + float", i + f, kiln::kFloat},
      {"float + double", f + d, kiln::kDouble},
      {"int + 0-d float", i + kiln::tensor(1.5), kiln::kFloat},
      {"0-d int + float", kiln::tensor(1) + f, kiln::kFloat},
      {"float + 0-d double", f + kiln::tensor(1.5, kiln::kDouble), kiln::kFloat},
      {"int + 0-d double", i + kiln::tensor(1.5, kiln::kDouble), kiln::kDouble},
      {"float * 2 (int)", f * 2, kiln::kFloat},
      {"double * 2.5", d * 2.5, kiln::kDouble},
      {"int < 2", i < 2, kiln::kBool},
      {"float == float", f == f, kiln::kBool},
      {"sum of bool", b.sum(), kiln::kLong},
      {"sum of int", i.sum(), kiln::kLong},
      {"sum of float", f.sum(), kiln::kFloat},
      {"sum of int dim", i.sum(0), kiln::kLong},
      {"sum of bool as double", b.sum(kiln::kDouble), kiln::kDouble},
      {"prod of int", i.prod(), kiln::kLong},
      {"mean of double", d.mean(), kiln::kDouble},
      {"mean of int as float", i.mean(kiln::kFloat), kiln::kFloat},
      {"int.pow(2)", i.pow(2), kiln::kLong},
      {"int.pow(3)", i.pow(3), kiln::kLong},
      {"int.pow(2.0)", i.pow(2.0), kiln::kFloat},
      {"int.pow(1.0)", i.pow(1.0), kiln::kFloat},
      {"int.pow(0.5)", i.pow(0.5), kiln::kFloat},
      {"2.0 ** int", kiln::pow(2.0, i), kiln::kFloat},
      {"int.exp()", i.exp(), kiln::kFloat},
      {"int.sqrt()", i.sqrt(), kiln::kFloat},
      {"int.sigmoid()", i.sigmoid(), kiln::kFloat},
      {"int.abs()", i.abs(), kiln::kLong},
      {"-int", -i, kiln::kLong},
      {"int.clamp(0, 1)", i.clamp(0, 1), kiln::kLong},
      {"where(c, int, float)", kiln::where(b, i, f), kiln::kFloat},
      {"cat(int, float)", kiln::cat({i, f}), kiln::kFloat},
      {"argmax", f.argmax(), kiln::kLong},
      {"max of int", i.max(), kiln::kLong},
      {"all", i.all(), kiln::kBool},
      {"softmax of int", i.softmax(0), kiln::kFloat},
      {"int.to(double)", i.to(kiln::kDouble), kiln::kDouble},
      {"float.to(dtype(int))", f.to(kiln::dtype(kiln::kLong)), kiln::kLong},
  };
  for (const auto& c : cases) EXPECT_EQ(c.t.dtype(), c.dtype) << c.what;
  EXPECT_EQ(vals(i * 2.5), (std::vector<double>{2.5, 5}));
  EXPECT_EQ(vals(i + 1), (std::vector<double>{2, 3}));
  EXPECT_EQ(vals(i / kiln::tensor({2, 2})), (std::vector<double>{0.5, 1}));
  EXPECT_EQ((b + b).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(kiln::tensor({true, false, true}).sum().item<int64_t>(), 2);
  EXPECT_EQ(vals(i.pow(2.0)), (std::vector<double>{1, 4}));
  EXPECT_EQ(kiln::tensor({2, 3, 4}).prod().item<int64_t>(), 24);
  EXPECT_EQ(vals(kiln::tensor({7, -7}) / 2), (std::vector<double>{3.5, -3.5}));
}

TEST(OpsDtype, CreationInference) {
  EXPECT_EQ(kiln::tensor({1.0, 2.0}).dtype(), kiln::kFloat);  // the default dtype, as libtorch
  EXPECT_EQ(kiln::tensor(std::vector<double>{1.0}).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::tensor({1, 2}).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::tensor({true}).dtype(), kiln::kBool);
  EXPECT_EQ(kiln::tensor(true).dtype(), kiln::kBool);
  EXPECT_EQ(kiln::tensor(2.5).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::tensor(3).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::tensor({1.0}, kiln::kDouble).dtype(), kiln::kDouble);
  EXPECT_EQ(kiln::arange(5).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::arange(0, 5).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::arange(0.0, 1.0, 0.25).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::arange(5, kiln::kDouble).dtype(), kiln::kDouble);
  EXPECT_EQ(kiln::linspace(0, 1, 5).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::eye(3).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::eye(2, kiln::kLong).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::full({2}, 3).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::full({2}, 3.5).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::full({2}, true).dtype(), kiln::kBool);
  EXPECT_EQ(kiln::full({2}, 3, kiln::kDouble).dtype(), kiln::kDouble);
  EXPECT_EQ(kiln::zeros({2}).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::ones({2}, kiln::kLong).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::zeros_like(kiln::tensor({1, 2})).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::ones_like(kiln::tensor({1, 2}), kiln::kFloat).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::full_like(kiln::tensor({1.0}), 7).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::rand({2}).dtype(), kiln::kFloat);
  EXPECT_EQ(kiln::randn({2}, kiln::kDouble).dtype(), kiln::kDouble);
  EXPECT_EQ(kiln::randint(5, {2}).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::randperm(4).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::scalar_tensor(2).dtype(), kiln::kFloat);  // the default dtype, as libtorch's
  EXPECT_EQ(kiln::scalar_tensor(2.5).dtype(), kiln::kFloat);
}

TEST(OpsDtype, CreationValues) {
  EXPECT_EQ(vals(kiln::arange(5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(vals(kiln::arange(2, 8, 3)), (std::vector<double>{2, 5}));
  EXPECT_EQ(vals(kiln::arange(0.0, 1.0, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(vals(kiln::eye(2, 3)), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(vals(kiln::full({2, 2}, 7)), (std::vector<double>{7, 7, 7, 7}));
  EXPECT_EQ(vals(kiln::zeros({2, 3})), std::vector<double>(6, 0.0));
  EXPECT_EQ(vals(kiln::ones({0})), std::vector<double>{});
  EXPECT_EQ(vals(kiln::tensor({{1, 2}, {3, 4}})), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_SHAPE(kiln::tensor({{1, 2}, {3, 4}}), 2, 2);
  EXPECT_SHAPE(kiln::tensor(3.5), );
  EXPECT_SHAPE(kiln::empty({2, 3}), 2, 3);
  float data[] = {1, 2, 3, 4, 5, 6};
  Tensor blob = kiln::from_blob(data, {2, 3});
  data[0] = 100;  // the tensor is the memory, as libtorch's
  EXPECT_EQ(vals(blob), (std::vector<double>{100, 2, 3, 4, 5, 6}));
  EXPECT_EQ(vals(kiln::from_blob(data + 1, {2, 2}, {3, 1})), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(vals(kiln::one_hot(kiln::tensor({0, 2}), 3)), (std::vector<double>{1, 0, 0, 0, 0, 1}));
  EXPECT_EQ(kiln::one_hot(kiln::tensor({1, 3})).size(1), 4);
}

TEST(OpsDtype, Conversions) {
  Tensor f = kiln::tensor({-1.7, 0.0, 0.5, 2.9});
  EXPECT_EQ(vals(f.to(kiln::kLong)), (std::vector<double>{-1, 0, 0, 2}));  // truncation toward zero
  EXPECT_EQ(f.to(kiln::kBool).to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(vals(kiln::tensor({true, false}).to(kiln::kFloat)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals(kiln::tensor({0.1}).to(kiln::kDouble)), (std::vector<double>{double(0.1f)}));
  EXPECT_TRUE(f.to(kiln::kFloat).is_same(f));  // same dtype: the tensor itself
  EXPECT_FALSE(f.to(kiln::kFloat, false, true).is_same(f));
  EXPECT_EQ(f.toType(kiln::kDouble).dtype(), kiln::kDouble);
  EXPECT_EQ(f.type_as(kiln::tensor({1})).dtype(), kiln::kLong);
  EXPECT_EQ(kiln::tensor({1, 2}).to(kiln::kFloat).to_vector<float>(), (std::vector<float>{1, 2}));
}

// --- reading values ---

TEST(OpsRead, ItemDataPtrToVector) {
  Tensor x = kiln::arange(6, kiln::kFloat).reshape({2, 3}) * 2;
  EXPECT_EQ(x.sum().item<float>(), 30.0f);
  EXPECT_EQ(x.sum().item<int64_t>(), 30);
  EXPECT_EQ(x.sum().item<double>(), 30.0);
  EXPECT_TRUE(x.sum().item().isFloatingPoint());
  EXPECT_EQ(x.sum().item().toDouble(), 30.0);
  EXPECT_TRUE(kiln::tensor({3}).sum().item().isIntegral());
  EXPECT_EQ(kiln::tensor({3}).sum().item().toLong(), 3);
  EXPECT_EQ(kiln::tensor({true}).all().item<bool>(), true);
  EXPECT_EQ(x[1][2].item<float>(), 10.0f);
  const float* p = x.data_ptr<float>();
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(x.data_ptr(), static_cast<const void*>(p));
  // A view's data_ptr points at its first element.
  EXPECT_EQ(x[1].data_ptr<float>(), p + 3);
  EXPECT_EQ(x.narrow(1, 1, 2).data_ptr<float>(), p + 1);
  EXPECT_EQ(*x.select(1, 2).data_ptr<float>(), 4.0f);
  // to_vector reads views in their logical order.
  EXPECT_EQ(x.t().to_vector<float>(), (std::vector<float>{0, 6, 2, 8, 4, 10}));
  EXPECT_EQ(x.t().to_vector<int64_t>(), (std::vector<int64_t>{0, 6, 2, 8, 4, 10}));
  EXPECT_EQ(x.select(1, 1).to_vector<double>(), (std::vector<double>{2, 8}));
  EXPECT_EQ(x.unsqueeze(0).expand({2, 2, 3}).sum().item<float>(), 60.0f);
  EXPECT_EQ(kiln::tensor({1, 2}).data_ptr<int64_t>()[1], 2);
  EXPECT_EQ(kiln::tensor({1.0}, kiln::kDouble).data_ptr<double>()[0], 1.0);
  EXPECT_EQ(kiln::tensor({true, false}).data_ptr<bool>()[0], true);
  EXPECT_EQ(x.toString(), "CPUFloatType");
  EXPECT_EQ(kiln::tensor({1}).toString(), "CPULongType");
}

TEST(OpsRead, Metadata) {
  Tensor x = kiln::zeros({2, 3, 4});
  EXPECT_EQ(x.dim(), 3);
  EXPECT_EQ(x.ndimension(), 3);
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_EQ(x.strides().vec(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(x.stride(0), 12);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_TRUE(x.is_floating_point());
  EXPECT_EQ(x.scalar_type(), kiln::kFloat);
  EXPECT_EQ(x.options().dtype(), kiln::kFloat);
  Tensor t = x.transpose(0, 2);
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.contiguous().is_contiguous());
  EXPECT_EQ(x.narrow(2, 1, 2).storage_offset(), 1);
  EXPECT_EQ(x.select(1, 2).storage_offset(), 8);
  EXPECT_EQ(x.unsqueeze(1).strides().vec(), (std::vector<int64_t>{12, 12, 4, 1}));
  EXPECT_EQ(x.expand({5, 2, 3, 4}).stride(0), 0);
  EXPECT_FALSE(kiln::Tensor().defined());
  EXPECT_TRUE(x.defined());
}

// --- reductions ---

TEST(OpsReduce, SumMeanProd) {
  Tensor x = kiln::arange(24, kiln::kFloat).reshape({2, 3, 4});
  EXPECT_EQ(x.sum().item<float>(), 276);
  EXPECT_SHAPE(x.sum(1), 2, 4);
  EXPECT_SHAPE(x.sum(1, true), 2, 1, 4);
  EXPECT_SHAPE(x.sum({0, 2}), 3);
  EXPECT_SHAPE(x.sum({0, 2}, true), 1, 3, 1);
  EXPECT_SHAPE(x.sum({-1}), 2, 3);
  EXPECT_EQ(vals(x.sum({0, 2})), (std::vector<double>{60, 92, 124}));
  EXPECT_EQ(vals(x.sum({-1, 0})), (std::vector<double>{60, 92, 124}));
  EXPECT_EQ(vals(x.mean(2)), (std::vector<double>{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  EXPECT_EQ(x.mean().item<float>(), 11.5f);
  EXPECT_EQ(vals(kiln::tensor({{1.0, 2.0}, {3.0, 4.0}}).prod(1)), (std::vector<double>{2, 12}));
  EXPECT_EQ(vals(kiln::tensor({{1.0, 2.0}, {3.0, 4.0}}).prod(0, true)), (std::vector<double>{3, 8}));
  EXPECT_EQ(kiln::tensor({{1.0, 2.0}, {3.0, 4.0}}).prod().item<float>(), 24);
  EXPECT_EQ(kiln::zeros({0}).sum().item<float>(), 0);
  EXPECT_EQ(kiln::zeros({0}).prod().item<float>(), 1);
  EXPECT_EQ(kiln::tensor(5.0).sum().item<float>(), 5);
  EXPECT_SHAPE(kiln::tensor(5.0).sum(0), );
}

TEST(OpsReduce, MaxMinArg) {
  Tensor x = kiln::tensor({{3.0, 7.0, 7.0}, {-1.0, -5.0, -1.0}});
  EXPECT_EQ(x.max().item<float>(), 7);
  EXPECT_EQ(x.min().item<float>(), -5);
  auto [values, indices] = x.max(1);
  EXPECT_EQ(vals(values), (std::vector<double>{7, -1}));
  EXPECT_EQ(vals(indices), (std::vector<double>{1, 0}));  // the first of ties, as PyTorch
  EXPECT_EQ(indices.dtype(), kiln::kLong);
  auto [mn, mi] = kiln::min(x, 0, true);
  EXPECT_SHAPE(mn, 1, 3);
  EXPECT_EQ(vals(mn), (std::vector<double>{-1, -5, -1}));
  EXPECT_EQ(vals(mi), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);
  EXPECT_EQ(x.argmin().item<int64_t>(), 4);
  EXPECT_EQ(vals(x.argmax(1)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals(x.argmin(-1, true)), (std::vector<double>{0, 1}));
  EXPECT_SHAPE(x.argmin(-1, true), 2, 1);
  EXPECT_SHAPE(x.argmax(std::nullopt, true), 1, 1);
  EXPECT_EQ(vals(x.amax({0, 1})), (std::vector<double>{7}));
  EXPECT_EQ(vals(x.amax(0)), (std::vector<double>{3, 7, 7}));
  EXPECT_EQ(vals(x.amin(-1, true)), (std::vector<double>{3, -5}));
  EXPECT_EQ(kiln::tensor({2, 9, 4}).argmax().item<int64_t>(), 1);
  EXPECT_EQ(kiln::tensor({2, 9, 4}).max().item<int64_t>(), 9);
}

TEST(OpsReduce, AllAny) {
  Tensor b = kiln::tensor({true, false, true, true}).reshape({2, 2});
  EXPECT_FALSE(b.all().item<bool>());
  EXPECT_TRUE(b.any().item<bool>());
  EXPECT_EQ(b.all(0).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(b.all(1).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(kiln::any(b, -1, true).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_SHAPE(kiln::any(b, -1, true), 2, 1);
  EXPECT_TRUE(kiln::tensor({1.0, 2.0}).all().item<bool>());
  EXPECT_FALSE(kiln::tensor({0, 0}).any().item<bool>());
  EXPECT_TRUE(kiln::zeros({0}).all().item<bool>());
  EXPECT_FALSE(kiln::zeros({0}).any().item<bool>());
}

TEST(OpsReduce, VarStdNormLogsumexp) {
  Tensor x = kiln::tensor({1.0, 2.0, 3.0, 4.0}, kiln::kDouble);
  EXPECT_TRUE(near(x.var(), {5.0 / 3}));
  EXPECT_TRUE(near(x.var(false), {1.25}));
  EXPECT_TRUE(near(x.std(), {std::sqrt(5.0 / 3)}));
  Tensor m = x.reshape({2, 2});
  EXPECT_TRUE(near(m.var({1}, true), {0.5, 0.5}));
  EXPECT_TRUE(near(m.var({0}, false, true), {1, 1}));
  EXPECT_SHAPE(m.var({0}, false, true), 1, 2);
  EXPECT_TRUE(near(m.std({0, 1}), {std::sqrt(5.0 / 3)}));
  Tensor v = kiln::tensor({3.0, -4.0});
  EXPECT_TRUE(near(v.norm(), {5}));
  EXPECT_TRUE(near(v.norm(1), {7}));
  EXPECT_TRUE(near(v.norm(INFINITY), {4}));
  EXPECT_TRUE(near(v.norm(-INFINITY), {3}));
  EXPECT_TRUE(near(v.norm(3), {std::cbrt(91.0)}));
  EXPECT_TRUE(near(m.norm(2, {1}), {std::sqrt(5.0), 5}));
  EXPECT_TRUE(near(m.norm(1, {0}, true), {4, 6}));
  EXPECT_TRUE(near(x.logsumexp({0}), {std::log(std::exp(1) + std::exp(2) + std::exp(3) + std::exp(4))}, 1e-12));
  EXPECT_TRUE(
      near(m.logsumexp({1}, true), {std::log(std::exp(1) + std::exp(2)), std::log(std::exp(3) + std::exp(4))}, 1e-12));
  // Large values do not overflow; -inf rows stay -inf.
  EXPECT_TRUE(near(kiln::tensor({1000.0, 1000.0}).logsumexp({0}), {1000 + std::log(2.0)}));
  EXPECT_TRUE(near(kiln::tensor({-INFINITY, -INFINITY}).logsumexp({0}), {-INFINITY}));
}

TEST(OpsReduce, Softmax) {
  Tensor x = kiln::tensor({1.0, 2.0, 3.0});
  EXPECT_TRUE(near(x.softmax(0), {0.09003057317038046, 0.24472847105479767, 0.6652409557748219}));
  EXPECT_TRUE(near(x.log_softmax(0), {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806}));
  EXPECT_TRUE(near((x * 1000).softmax(0), {0, 0, 1}));
  Tensor m = kiln::arange(6, kiln::kFloat).reshape({2, 3});
  EXPECT_TRUE(near(m.softmax(0).sum(0), {1, 1, 1}));
  EXPECT_TRUE(near(m.softmax(-1).sum(-1), {1, 1}));
  EXPECT_TRUE(near(kiln::softmax(m, 1), vals(kiln::softmax(m - 10, 1))));
  EXPECT_TRUE(near(kiln::log_softmax(m, 0).exp().sum(0), {1, 1, 1}));
  EXPECT_EQ(kiln::softmax(m, 1, kiln::kDouble).dtype(), kiln::kDouble);
}

// --- linear algebra and indexing ---

TEST(OpsLinalg, Matmul) {
  Tensor a = kiln::tensor({{1.0, 2.0}, {3.0, 4.0}});
  Tensor b = kiln::tensor({{5.0, 6.0}, {7.0, 8.0}});
  EXPECT_EQ(vals(a.matmul(b)), (std::vector<double>{19, 22, 43, 50}));
  EXPECT_EQ(vals(a.mm(b.t())), (std::vector<double>{17, 23, 39, 53}));
  EXPECT_EQ(vals(a.t().mm(b)), (std::vector<double>{26, 30, 38, 44}));
  Tensor v = kiln::tensor({1.0, -1.0});
  EXPECT_EQ(vals(kiln::matmul(v, v)), (std::vector<double>{2}));
  EXPECT_SHAPE(kiln::matmul(v, v), );
  EXPECT_EQ(vals(a.matmul(v)), (std::vector<double>{-1, -1}));
  EXPECT_EQ(vals(v.matmul(a)), (std::vector<double>{-2, -2}));
  Tensor batch = kiln::stack({a, b});  // [2, 2, 2]
  EXPECT_EQ(vals(batch.bmm(batch)), (std::vector<double>{7, 10, 15, 22, 67, 78, 91, 106}));
  EXPECT_EQ(vals(batch.matmul(v)), (std::vector<double>{-1, -1, -1, -1}));
  EXPECT_EQ(vals(v.matmul(batch)), (std::vector<double>{-2, -2, -2, -2}));
  EXPECT_EQ(vals(batch.matmul(a)), (std::vector<double>{7, 10, 15, 22, 23, 34, 31, 46}));
  EXPECT_EQ(vals(a.matmul(batch)), (std::vector<double>{7, 10, 15, 22, 19, 22, 43, 50}));
  EXPECT_SHAPE(kiln::matmul(kiln::ones({3, 1, 2, 4}), kiln::ones({5, 4, 6})), 3, 5, 2, 6);
  EXPECT_EQ(kiln::matmul(kiln::ones({3, 1, 2, 4}), kiln::ones({5, 4, 6})).sum().item<float>(), 3 * 5 * 2 * 6 * 4);
  EXPECT_SHAPE(kiln::matmul(kiln::ones({4}), kiln::ones({3, 4, 2})), 3, 2);
  EXPECT_SHAPE(kiln::matmul(kiln::ones({3, 2, 4}), kiln::ones({4})), 3, 2);
  EXPECT_EQ(vals(kiln::linear(v, a, kiln::tensor({10.0, 20.0}))), (std::vector<double>{9, 19}));
  EXPECT_EQ(vals(kiln::linear(a, a)), (std::vector<double>{5, 11, 11, 25}));
  Tensor ia = kiln::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(ia.matmul(ia).dtype(), kiln::kLong);
  EXPECT_EQ(vals(ia.matmul(ia)), (std::vector<double>{7, 10, 15, 22}));
  EXPECT_EQ(vals(kiln::matmul(kiln::zeros({2, 0}), kiln::zeros({0, 3}))), std::vector<double>(6, 0.0));
  Tensor da = a.to(kiln::kDouble);
  EXPECT_EQ(vals(da.matmul(da)), (std::vector<double>{7, 10, 15, 22}));
}

// Products large enough to be split across the worker pool, by rows (more rows than columns) or by
// columns, with either operand transposed. Small integers keep every float sum exact, so the
// float32 result must equal the float64 one.
TEST(OpsLinalg, LargeMatmulsSplitAcrossThreadsExactly) {
  const int saved = kiln::get_num_threads();
  kiln::set_num_threads(2);
  kiln::manual_seed(3);
  auto ints = [](std::vector<int64_t> shape) { return kiln::randint(-4, 5, shape).to(kiln::kFloat); };
  struct Case {
    Tensor a, b;
  };
  const std::vector<Case> cases = {
      {ints({300, 200}), ints({200, 100})},        // rows
      {ints({40, 300}), ints({300, 400})},         // columns
      {ints({200, 300}).t(), ints({200, 130})},    // op(A) transposed
      {ints({130, 200}), ints({170, 200}).t()},    // op(B) transposed
      {ints({300, 40}).t(), ints({400, 300}).t()}  // both, by columns
  };
  for (const auto& c : cases) {
    const Tensor got = c.a.matmul(c.b), want = c.a.to(kiln::kDouble).matmul(c.b.to(kiln::kDouble));
    EXPECT_EQ(vals(got), vals(want)) << c.a.sizes() << " x " << c.b.sizes();
  }
  kiln::set_num_threads(saved);
}

TEST(OpsLinalg, IndexingAndJoining) {
  Tensor x = kiln::arange(12, kiln::kFloat).reshape({3, 4});
  EXPECT_EQ(vals(x.index_select(0, kiln::tensor({2, 0}))), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_EQ(vals(x.index_select(1, kiln::tensor({3, 3}))), (std::vector<double>{3, 3, 7, 7, 11, 11}));
  EXPECT_EQ(vals(x.index_select(-1, kiln::tensor({3}))), (std::vector<double>{3, 7, 11}));
  EXPECT_THROW(x.index_select(-1, kiln::tensor({-1})), kiln::Error);  // PyTorch: index out of range in self
  EXPECT_EQ(vals(x.gather(1, kiln::tensor({{0, 3}, {1, 1}, {2, 0}}))), (std::vector<double>{0, 3, 5, 5, 10, 8}));
  EXPECT_EQ(vals(x.gather(0, kiln::tensor({{2, 1, 0, 0}}))), (std::vector<double>{8, 5, 2, 3}));
  Tensor emb = kiln::embedding(x, kiln::tensor({{2, 0}}));
  EXPECT_SHAPE(emb, 1, 2, 4);
  EXPECT_EQ(vals(emb), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_EQ(vals(kiln::cat({x.narrow(0, 0, 1), x.narrow(0, 2, 1)})), (std::vector<double>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(vals(kiln::cat({x.select(1, 0).unsqueeze(1), x.select(1, 3).unsqueeze(1)}, -1)),
            (std::vector<double>{0, 3, 4, 7, 8, 11}));
  EXPECT_EQ(vals(kiln::cat({kiln::zeros({0}), kiln::ones({2})})), (std::vector<double>{1, 1}));
  Tensor s = kiln::stack({kiln::tensor({1.0, 2.0}), kiln::tensor({3.0, 4.0})}, 1);
  EXPECT_SHAPE(s, 2, 2);
  EXPECT_EQ(vals(s), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_SHAPE(kiln::stack({x, x, x}, -1), 3, 4, 3);
}

// --- views ---

TEST(OpsViews, ValuesAndSharing) {
  Tensor x = kiln::arange(12, kiln::kFloat).reshape({3, 4});
  EXPECT_EQ(vals(x.t()), (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(vals(x.narrow(1, 1, 2)), (std::vector<double>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(vals(x.slice(1, 0, 4, 3)), (std::vector<double>{0, 3, 4, 7, 8, 11}));
  EXPECT_EQ(vals(x.slice(0, -1, 100)), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(vals(x.select(0, -1)), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_EQ(vals(x[1]), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(vals(x.permute({1, 0})), vals(x.t()));
  EXPECT_EQ(vals(x.reshape({2, 6})[1]), (std::vector<double>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(vals(x.view({-1, 2}).select(1, 1)), (std::vector<double>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(vals(x.narrow(0, 1, 1).expand({2, 4})), (std::vector<double>{4, 5, 6, 7, 4, 5, 6, 7}));
  EXPECT_SHAPE(x.unsqueeze(0).unsqueeze(-1), 1, 3, 4, 1);
  EXPECT_SHAPE(x.unsqueeze(0).unsqueeze(-1).squeeze(), 3, 4);
  EXPECT_SHAPE(x.unsqueeze(0).squeeze(1), 1, 3, 4);
  EXPECT_SHAPE(x.flatten(), 12);
  EXPECT_SHAPE(x.reshape({2, 3, 2}).flatten(1), 2, 6);
  EXPECT_SHAPE(x.unflatten(1, {2, 2}), 3, 2, 2);
  EXPECT_SHAPE(kiln::tensor(1.0).flatten(), 1);
  EXPECT_SHAPE(x.view_as(kiln::zeros({4, 3})), 4, 3);
  auto parts = x.split(3, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_SHAPE(parts[1], 3, 1);
  EXPECT_EQ(x.chunk(2, 0).size(), 2u);
  EXPECT_SHAPE(x.chunk(2, 0)[1], 1, 4);
  EXPECT_EQ(x.unbind(1).size(), 4u);
  EXPECT_EQ(vals(x.unbind(1)[2]), (std::vector<double>{2, 6, 10}));
  // Views share storage; copies do not.
  EXPECT_TRUE(x.t().is_alias_of(x));
  EXPECT_TRUE(x.view({12}).is_alias_of(x));
  EXPECT_TRUE(x.reshape({12}).is_alias_of(x));       // contiguous: reshape is a view
  EXPECT_FALSE(x.t().reshape({12}).is_alias_of(x));  // not viewable: reshape copies
  EXPECT_FALSE(x.clone().is_alias_of(x));
  EXPECT_TRUE(x.contiguous().is_same(x));
  EXPECT_FALSE(x.t().contiguous().is_alias_of(x));
  EXPECT_EQ(vals(x.t().reshape({12})), vals(x.t()));
}

}  // namespace
