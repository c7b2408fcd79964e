// Gradients of every differentiable op, first and second order, against finite differences in
// float64 (see gradcheck.h). Inputs are kept away from points where an op is not differentiable.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "gradcheck.h"

namespace {

using gradcheck::away_from_zero;
using gradcheck::check;
using gradcheck::check_grad;
using gradcheck::randn;
using gradcheck::uniform;
using kiln::Tensor;
using kiln::TensorList;

struct Case {
  const char* name;
  gradcheck::Fn f;
  TensorList inputs;
};

// Runs `check` (first and second order) or `check_grad` (first only) on each case.
void run_cases(const std::vector<Case>& cases, bool gradgrad = true) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    gradcheck::Options o;
    o.gradgrad = gradgrad;
    EXPECT_TRUE(check(c.f, c.inputs, o)) << c.name;
  }
}

Tensor positive(kiln::IntArrayRef shape) { return uniform(shape, 0.5, 2.0); }

class Grad : public ::testing::Test {
 protected:
  void SetUp() override { kiln::manual_seed(0); }
};

// --- the checker itself ---

TEST_F(Grad, CheckerCatchesAWrongGradient) {
  // A custom function whose backward is off by a factor: the checker must notice.
  struct Wrong : kiln::autograd::Function<Wrong> {
    static Tensor forward(kiln::autograd::AutogradContext* ctx, Tensor x) {
      ctx->save_for_backward({x});
      return x * x;
    }
    static TensorList backward(kiln::autograd::AutogradContext* ctx, TensorList g) {
      return {g[0] * ctx->get_saved_variables()[0] * 3};  // should be 2
    }
  };
  // Right first derivative, but computed from detached values: no second derivative.
  struct FirstOrderOnly : kiln::autograd::Function<FirstOrderOnly> {
    static Tensor forward(kiln::autograd::AutogradContext* ctx, Tensor x) {
      ctx->save_for_backward({x});
      return x * x * x;
    }
    static TensorList backward(kiln::autograd::AutogradContext* ctx, TensorList g) {
      Tensor x = ctx->get_saved_variables()[0].detach();
      return {g[0] * x * x * 3};
    }
  };
  Tensor x = randn({4});
  EXPECT_FALSE(check_grad([](const TensorList& in) { return Wrong::apply(in[0]); }, {x}));
  EXPECT_TRUE(check_grad([](const TensorList& in) { return in[0] * in[0]; }, {x}));
  EXPECT_TRUE(check_grad([](const TensorList& in) { return FirstOrderOnly::apply(in[0]); }, {x}));
  EXPECT_FALSE(gradcheck::check_gradgrad([](const TensorList& in) { return FirstOrderOnly::apply(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck::check_gradgrad([](const TensorList& in) { return in[0] * in[0] * in[0]; }, {x}));
}

// --- elementwise unary (first and second order) ---

TEST_F(Grad, Unary) {
  auto u = [](Tensor (*op)(const Tensor&)) { return [op](const TensorList& in) { return op(in[0]); }; };
  run_cases({
      {"neg", u(kiln::neg), {randn({3, 4})}},
      {"operator-", [](const TensorList& in) { return -in[0]; }, {randn({3, 4})}},
      {"abs", u(kiln::abs), {away_from_zero({3, 4})}},
      {"exp", u(kiln::exp), {randn({3, 4})}},
      {"log", u(kiln::log), {positive({3, 4})}},
      {"log1p", u(kiln::log1p), {positive({3, 4})}},
      {"log2", u(kiln::log2), {positive({3, 4})}},
      {"sqrt", u(kiln::sqrt), {positive({3, 4})}},
      {"rsqrt", u(kiln::rsqrt), {positive({3, 4})}},
      {"sin", u(kiln::sin), {randn({3, 4})}},
      {"cos", u(kiln::cos), {randn({3, 4})}},
      {"tanh", u(kiln::tanh), {randn({3, 4})}},
      {"sigmoid", u(kiln::sigmoid), {randn({3, 4})}},
      {"relu", u(kiln::relu), {away_from_zero({3, 4})}},
      {"gelu", [](const TensorList& in) { return kiln::gelu(in[0]); }, {randn({3, 4})}},
      {"gelu tanh", [](const TensorList& in) { return kiln::gelu(in[0], "tanh"); }, {randn({3, 4})}},
      {"silu", u(kiln::silu), {randn({3, 4})}},
      {"erf", u(kiln::erf), {randn({3, 4})}},
      {"reciprocal", u(kiln::reciprocal), {away_from_zero({3, 4})}},
      {"square", u(kiln::square), {randn({3, 4})}},
      {"sign", u(kiln::sign), {away_from_zero({3, 4})}},
  });
}

TEST_F(Grad, UnaryMethods) {
  run_cases({
      {"x.exp().log1p()", [](const TensorList& in) { return in[0].exp().log1p(); }, {randn({5})}},
      {"x.sigmoid().tanh()", [](const TensorList& in) { return in[0].sigmoid().tanh(); }, {randn({5})}},
      {"x.abs().sqrt()", [](const TensorList& in) { return in[0].abs().sqrt(); }, {away_from_zero({5})}},
      {"x.relu() * x.sin()", [](const TensorList& in) { return in[0].relu() * in[0].sin(); }, {away_from_zero({5})}},
      {"x.gelu(tanh).silu()", [](const TensorList& in) { return in[0].gelu("tanh").silu(); }, {randn({5})}},
      {"x.rsqrt().reciprocal()", [](const TensorList& in) { return in[0].rsqrt().reciprocal(); }, {positive({5})}},
      {"x.square().erf().cos()", [](const TensorList& in) { return in[0].square().erf().cos(); }, {randn({5})}},
      {"x.log2().neg()", [](const TensorList& in) { return in[0].log2().neg(); }, {positive({5})}},
  });
}

TEST_F(Grad, PowAndClamp) {
  run_cases({
      {"pow(x, 3)", [](const TensorList& in) { return kiln::pow(in[0], 3); }, {randn({3, 4})}},
      {"pow(x, 2)", [](const TensorList& in) { return in[0].pow(2); }, {randn({3, 4})}},
      {"pow(x, 1)", [](const TensorList& in) { return in[0].pow(1); }, {randn({3, 4})}},
      {"pow(x, 0)", [](const TensorList& in) { return in[0].pow(0) * in[0]; }, {randn({3, 4})}},
      {"pow(x, 2.5)", [](const TensorList& in) { return in[0].pow(2.5); }, {positive({3, 4})}},
      {"pow(x, 0.5)", [](const TensorList& in) { return in[0].pow(0.5); }, {positive({3, 4})}},
      {"pow(x, -1.5)", [](const TensorList& in) { return in[0].pow(-1.5); }, {positive({3, 4})}},
      {"pow(2.0, x)", [](const TensorList& in) { return kiln::pow(2.0, in[0]); }, {randn({3, 4})}},
      {"pow(x, e)", [](const TensorList& in) { return kiln::pow(in[0], in[1]); }, {positive({3, 4}), randn({3, 4})}},
      {"x.pow(e) e broadcast", [](const TensorList& in) { return in[0].pow(in[1]); }, {positive({3, 4}), randn({4})}},
      {"clamp(-0.5, 0.5)", [](const TensorList& in) { return kiln::clamp(in[0], -0.5, 0.5); }, {randn({4, 5})}},
      {"clamp(min only)", [](const TensorList& in) { return in[0].clamp(0.1); }, {randn({4, 5})}},
      {"clamp(max only)", [](const TensorList& in) { return in[0].clamp(std::nullopt, -0.1); }, {randn({4, 5})}},
      {"clamp_min", [](const TensorList& in) { return kiln::clamp_min(in[0], 0.2); }, {randn({4, 5})}},
      {"clamp_max", [](const TensorList& in) { return in[0].clamp_max(0.3); }, {randn({4, 5})}},
  });
}

// --- binary, with broadcasting ---

TEST_F(Grad, BinaryBroadcast) {
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return kiln::maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); }},
      {"add alpha", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b, 2.5); }},
      {"sub alpha", [](const Tensor& a, const Tensor& b) { return a.sub(b, -0.5); }},
  };
  const std::vector<std::pair<kiln::Shape, kiln::Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{4}, {3, 4}}, {{2, 1, 3}, {4, 1}}, {{3}, {}}, {{}, {3}}, {{}, {}},
  };
  for (const auto& [name, op] : ops)
    for (const auto& [sa, sb] : shapes) {
      // Positive operands keep pow real and div away from a zero denominator.
      std::vector<Case> cases = {
          {name, [op = op](const TensorList& in) { return op(in[0], in[1]); }, {positive(sa), positive(sb)}}};
      SCOPED_TRACE(::testing::Message() << name << " " << kiln::IntArrayRef(sa) << " x " << kiln::IntArrayRef(sb));
      run_cases(cases);
    }
}

TEST_F(Grad, BinaryWithScalars) {
  run_cases({
      {"x + 2", [](const TensorList& in) { return in[0] + 2; }, {randn({3, 4})}},
      {"2 + x", [](const TensorList& in) { return 2 + in[0]; }, {randn({3, 4})}},
      {"x - 1.5", [](const TensorList& in) { return in[0] - 1.5; }, {randn({3, 4})}},
      {"1.5 - x", [](const TensorList& in) { return 1.5 - in[0]; }, {randn({3, 4})}},
      {"x * 3", [](const TensorList& in) { return in[0] * 3; }, {randn({3, 4})}},
      {"3 * x", [](const TensorList& in) { return 3.0 * in[0]; }, {randn({3, 4})}},
      {"x / 4", [](const TensorList& in) { return in[0] / 4; }, {randn({3, 4})}},
      {"4 / x", [](const TensorList& in) { return 4.0 / in[0]; }, {away_from_zero({3, 4})}},
      {"x.add(2, 3)", [](const TensorList& in) { return in[0].add(2, 3); }, {randn({3, 4})}},
      {"x.sub(2, 3)", [](const TensorList& in) { return in[0].sub(2, 3); }, {randn({3, 4})}},
      {"x.mul(2).div(5)", [](const TensorList& in) { return in[0].mul(2).div(5); }, {randn({3, 4})}},
      {"x * x (same input twice)", [](const TensorList& in) { return in[0] * in[0]; }, {randn({3, 4})}},
      {"lerp", [](const TensorList& in) { return kiln::lerp(in[0], in[1], 0.3); }, {randn({3, 4}), randn({4})}},
      {"addcmul",
       [](const TensorList& in) { return kiln::addcmul(in[0], in[1], in[2], 0.5); },
       {randn({3, 4}), randn({3, 4}), randn({4})}},
      {"addcdiv",
       [](const TensorList& in) { return kiln::addcdiv(in[0], in[1], in[2], 2); },
       {randn({3, 4}), randn({3, 4}), away_from_zero({3, 1})}},
  });
}

TEST_F(Grad, WhereAndMaskedFill) {
  Tensor cond = kiln::randn({3, 1}) > 0;
  Tensor mask = kiln::tensor({true, false, true, false}).reshape({1, 4});
  run_cases({
      {"where broadcast",
       [cond](const TensorList& in) { return kiln::where(cond, in[0], in[1]); },
       {randn({3, 4}), randn({4})}},
      {"where scalar other", [cond](const TensorList& in) { return kiln::where(cond, in[0], 0.5); }, {randn({3, 4})}},
      {"where scalar self", [cond](const TensorList& in) { return kiln::where(cond, 2.0, in[0]); }, {randn({3, 4})}},
      {"x.where(c, y)",
       [](const TensorList& in) { return in[0].where(in[0] > in[1], in[1] * 2); },
       {randn({3, 4}), randn({3, 4})}},
      {"masked_fill", [mask](const TensorList& in) { return in[0].masked_fill(mask, -1.5); }, {randn({3, 4})}},
      {"masked_fill free",
       [mask](const TensorList& in) { return kiln::masked_fill(in[0].exp(), mask, 0.0); },
       {randn({2, 4})}},
  });
}

// --- reductions ---

TEST_F(Grad, SumMeanProd) {
  run_cases({
      {"sum", [](const TensorList& in) { return in[0].sum(); }, {randn({2, 3, 4})}},
      {"sum dims {0,2}",
       [](const TensorList& in) {
         return in[0].sum({0, 2});
       },
       {randn({2, 3, 4})}},
      {"sum dim -1 keepdim", [](const TensorList& in) { return in[0].sum(-1, true); }, {randn({2, 3, 4})}},
      {"sum dims {-1,-3} keepdim",
       [](const TensorList& in) {
         return kiln::sum(in[0], {-1, -3}, true);
       },
       {randn({2, 3, 4})}},
      {"sum of 0-d", [](const TensorList& in) { return in[0].sum(); }, {randn({})}},
      {"mean", [](const TensorList& in) { return in[0].mean(); }, {randn({2, 3, 4})}},
      {"mean dim 1", [](const TensorList& in) { return in[0].mean(1); }, {randn({2, 3, 4})}},
      {"mean dims {0,-1} keepdim",
       [](const TensorList& in) {
         return kiln::mean(in[0], {0, -1}, true);
       },
       {randn({2, 3, 4})}},
      {"prod", [](const TensorList& in) { return in[0].prod(); }, {away_from_zero({2, 3})}},
      {"prod dim 1", [](const TensorList& in) { return in[0].prod(1); }, {away_from_zero({2, 3, 2})}},
      {"prod dim -1 keepdim",
       [](const TensorList& in) { return kiln::prod(in[0], -1, true); },
       {away_from_zero({2, 3})}},
  });
}

TEST_F(Grad, ProdWithZeros) {
  // One zero in a slice: its gradient is the product of the others; two zeros: all zero.
  Tensor x = gradcheck::leaf(kiln::tensor({{2.0, 0.0, 3.0}, {0.0, 0.0, 5.0}, {1.5, -2.0, 0.5}}));
  EXPECT_TRUE(check_grad([](const TensorList& in) { return in[0].prod(1); }, {x}));
  EXPECT_TRUE(check_grad([](const TensorList& in) { return in[0].prod(0); }, {x}));
  Tensor y = gradcheck::leaf(kiln::tensor({2.0, 0.0, 3.0, -1.0}));
  EXPECT_TRUE(check_grad([](const TensorList& in) { return in[0].prod(); }, {y}));
  auto g = kiln::autograd::grad({y.prod()}, {y})[0].to_vector<double>();
  EXPECT_EQ(g, (std::vector<double>{0, -6, 0, 0}));
}

TEST_F(Grad, MaxMin) {
  run_cases({
      {"amax", [](const TensorList& in) { return in[0].amax(); }, {randn({2, 3, 4})}},
      {"amax dims {0,2}",
       [](const TensorList& in) {
         return in[0].amax({0, 2});
       },
       {randn({2, 3, 4})}},
      {"amax dim -1 keepdim", [](const TensorList& in) { return kiln::amax(in[0], -1, true); }, {randn({2, 3, 4})}},
      {"amin", [](const TensorList& in) { return in[0].amin(); }, {randn({2, 3, 4})}},
      {"amin dims {1} keepdim", [](const TensorList& in) { return in[0].amin({1}, true); }, {randn({2, 3, 4})}},
      {"max()", [](const TensorList& in) { return in[0].max(); }, {randn({3, 4})}},
      {"min()", [](const TensorList& in) { return kiln::min(in[0]); }, {randn({3, 4})}},
      {"max(dim)", [](const TensorList& in) { return std::get<0>(in[0].max(1)); }, {randn({3, 4})}},
      {"max(-1, keepdim)",
       [](const TensorList& in) { return std::get<0>(kiln::max(in[0], -1, true)); },
       {randn({2, 3, 4})}},
      {"min(dim 0)", [](const TensorList& in) { return std::get<0>(in[0].min(0)); }, {randn({3, 4})}},
      {"min(-2, keepdim)", [](const TensorList& in) { return std::get<0>(in[0].min(-2, true)); }, {randn({2, 3, 4})}},
  });
}

TEST_F(Grad, VarStdNorm) {
  run_cases({
      {"var", [](const TensorList& in) { return in[0].var(); }, {randn({3, 4})}},
      {"var biased", [](const TensorList& in) { return kiln::var(in[0], false); }, {randn({3, 4})}},
      {"var dim 1", [](const TensorList& in) { return in[0].var({1}, true); }, {randn({3, 4})}},
      {"var dims {0,-1} keepdim biased",
       [](const TensorList& in) {
         return in[0].var({0, -1}, false, true);
       },
       {randn({2, 3, 4})}},
      {"std", [](const TensorList& in) { return in[0].std(); }, {randn({3, 4})}},
      {"std dim 0 keepdim", [](const TensorList& in) { return kiln::std(in[0], {0}, true, true); }, {randn({3, 4})}},
      {"norm", [](const TensorList& in) { return in[0].norm(); }, {randn({3, 4})}},
      {"norm p=1", [](const TensorList& in) { return in[0].norm(1); }, {away_from_zero({3, 4})}},
      {"norm p=2 dim 1", [](const TensorList& in) { return in[0].norm(2, {1}); }, {randn({3, 4})}},
      {"norm p=3", [](const TensorList& in) { return kiln::norm(in[0], 3); }, {away_from_zero({3, 4})}},
      {"norm p=3 dim -1 keepdim",
       [](const TensorList& in) { return in[0].norm(3, {-1}, true); },
       {away_from_zero({3, 4})}},
      {"norm p=inf", [](const TensorList& in) { return in[0].norm(INFINITY); }, {randn({3, 4})}},
      {"norm p=-inf dim 0", [](const TensorList& in) { return in[0].norm(-INFINITY, {0}); }, {randn({3, 4})}},
      {"norm p=1 dims {0,1}",
       [](const TensorList& in) {
         return in[0].norm(1, {0, 1});
       },
       {away_from_zero({2, 3, 2})}},
  });
}

TEST_F(Grad, SoftmaxFamily) {
  std::vector<Case> cases;
  for (int64_t d : {0, 1, 2, -1, -2, -3}) {
    cases.push_back({"softmax", [d](const TensorList& in) { return in[0].softmax(d); }, {randn({2, 3, 4})}});
    cases.push_back(
        {"log_softmax", [d](const TensorList& in) { return kiln::log_softmax(in[0], d); }, {randn({2, 3, 4})}});
    cases.push_back({"logsumexp", [d](const TensorList& in) { return in[0].logsumexp({d}); }, {randn({2, 3, 4})}});
    cases.push_back({"logsumexp keepdim",
                     [d](const TensorList& in) { return kiln::logsumexp(in[0], {d}, true); },
                     {randn({2, 3, 4})}});
  }
  cases.push_back({"logsumexp {0,2}",
                   [](const TensorList& in) {
                     return in[0].logsumexp({0, 2});
                   },
                   {randn({2, 3, 4})}});
  cases.push_back({"logsumexp all", [](const TensorList& in) { return in[0].logsumexp({}); }, {randn({2, 3})}});
  cases.push_back({"softmax large", [](const TensorList& in) { return (in[0] * 50).softmax(-1); }, {randn({2, 3})}});
  run_cases(cases);
}

// --- linear algebra ---

TEST_F(Grad, Matmul) {
  const std::vector<std::pair<kiln::Shape, kiln::Shape>> shapes = {
      {{4}, {4}},                 // 1D x 1D: dot product
      {{3, 4}, {4}},              // 2D x 1D
      {{4}, {4, 5}},              // 1D x 2D
      {{3, 4}, {4, 5}},           // 2D x 2D
      {{2, 3, 4}, {2, 4, 5}},     // batched
      {{2, 1, 3, 4}, {3, 4, 2}},  // batched, broadcast batch
      {{2, 3, 4}, {4, 5}},        // 3D x 2D
      {{3, 4}, {2, 4, 5}},        // 2D x 3D
      {{4}, {2, 4, 5}},           // 1D x 3D
      {{2, 3, 4}, {4}},           // 3D x 1D
      {{1, 3, 4}, {2, 4, 2}},     // batch dim 1 broadcast
  };
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(::testing::Message() << "matmul " << kiln::IntArrayRef(sa) << " x " << kiln::IntArrayRef(sb));
    run_cases({{"matmul",
                [](const TensorList& in) { return kiln::matmul(in[0], in[1]); },
                {gradcheck::randn(sa), gradcheck::randn(sb)}}});
  }
}

TEST_F(Grad, MmBmmLinear) {
  run_cases({
      {"mm", [](const TensorList& in) { return in[0].mm(in[1]); }, {randn({3, 4}), randn({4, 2})}},
      {"mm transposed inputs",
       [](const TensorList& in) { return kiln::mm(in[0].t(), in[1].t()); },
       {randn({4, 3}), randn({2, 4})}},
      {"bmm", [](const TensorList& in) { return in[0].bmm(in[1]); }, {randn({2, 3, 4}), randn({2, 4, 5})}},
      {"linear",
       [](const TensorList& in) { return kiln::linear(in[0], in[1], in[2]); },
       {randn({3, 4}), randn({5, 4}), randn({5})}},
      {"linear no bias",
       [](const TensorList& in) { return kiln::linear(in[0], in[1]); },
       {randn({3, 4}), randn({5, 4})}},
      {"linear 3D input",
       [](const TensorList& in) { return kiln::linear(in[0], in[1], in[2]); },
       {randn({2, 3, 4}), randn({5, 4}), randn({5})}},
      {"linear 1D input",
       [](const TensorList& in) { return kiln::linear(in[0], in[1], in[2]); },
       {randn({4}), randn({5, 4}), randn({5})}},
      {"mlp",
       [](const TensorList& in) { return kiln::linear(kiln::linear(in[0], in[1]).tanh(), in[2]).sum(1); },
       {randn({3, 4}), randn({5, 4}), randn({2, 5})}},
  });
}

// --- joining and indexing ---

TEST_F(Grad, CatStack) {
  run_cases({
      {"cat dim 0",
       [](const TensorList& in) {
         return kiln::cat({in[0], in[1]});
       },
       {randn({2, 3}), randn({4, 3})}},
      {"cat dim 1",
       [](const TensorList& in) {
         return kiln::cat({in[0], in[1], in[0]}, 1);
       },
       {randn({2, 3}), randn({2, 1})}},
      {"cat dim -1",
       [](const TensorList& in) {
         return kiln::cat({in[0], in[1]}, -1);
       },
       {randn({2, 2, 3}), randn({2, 2, 2})}},
      {"cat views",
       [](const TensorList& in) {
         return kiln::cat({in[0].t(), in[1].narrow(0, 1, 2)}, 0);
       },
       {randn({3, 2}), randn({4, 3})}},
      {"stack dim 0",
       [](const TensorList& in) {
         return kiln::stack({in[0], in[1]});
       },
       {randn({2, 3}), randn({2, 3})}},
      {"stack dim 1",
       [](const TensorList& in) {
         return kiln::stack({in[0], in[1], in[1]}, 1);
       },
       {randn({2, 3}), randn({2, 3})}},
      {"stack dim -1",
       [](const TensorList& in) {
         return kiln::stack({in[0], in[1].exp()}, -1);
       },
       {randn({2, 3}), randn({2, 3})}},
  });
}

TEST_F(Grad, IndexSelectGatherEmbedding) {
  Tensor idx = kiln::tensor({2, 0, 2, 1});
  Tensor pending_idx = (kiln::arange(4) - 1).abs();  // [1, 0, 1, 2], still lazy
  Tensor gidx = kiln::tensor({{0, 2, 1}, {1, 1, 0}});
  Tensor tokens = kiln::tensor({{1, 3}, {3, 0}, {2, 1}});
  run_cases({
      {"index_select dim 0", [idx](const TensorList& in) { return in[0].index_select(0, idx); }, {randn({3, 4})}},
      {"index_select dim 1",
       [idx](const TensorList& in) { return kiln::index_select(in[0], 1, idx); },
       {randn({2, 3})}},
      {"index_select dim -1 computed index",
       [pending_idx](const TensorList& in) { return in[0].index_select(-1, pending_idx); },
       {randn({2, 3})}},
      {"gather dim 0", [gidx](const TensorList& in) { return in[0].gather(0, gidx); }, {randn({3, 3})}},
      {"gather dim 1", [gidx](const TensorList& in) { return kiln::gather(in[0], 1, gidx); }, {randn({2, 4})}},
      {"gather dim -1 smaller",
       [gidx](const TensorList& in) { return in[0].gather(-1, gidx.narrow(1, 0, 2)); },
       {randn({3, 3})}},
      {"embedding", [tokens](const TensorList& in) { return kiln::embedding(in[0], tokens); }, {randn({4, 3})}},
      {"embedding 1D", [idx](const TensorList& in) { return kiln::embedding(in[0], idx); }, {randn({3, 2})}},
  });
}

// --- views ---

TEST_F(Grad, Views) {
  run_cases({
      {"reshape",
       [](const TensorList& in) {
         return in[0].reshape({4, 3});
       },
       {randn({3, 4})}},
      {"reshape -1", [](const TensorList& in) { return kiln::reshape(in[0], {-1}); }, {randn({3, 4})}},
      {"view",
       [](const TensorList& in) {
         return in[0].view({2, 6});
       },
       {randn({3, 4})}},
      {"view_as", [](const TensorList& in) { return in[0].view_as(in[1]); }, {randn({3, 4}), randn({12})}},
      {"t", [](const TensorList& in) { return in[0].t(); }, {randn({3, 4})}},
      {"transpose", [](const TensorList& in) { return in[0].transpose(0, 2); }, {randn({2, 3, 4})}},
      {"transpose neg", [](const TensorList& in) { return kiln::transpose(in[0], -1, -2); }, {randn({2, 3, 4})}},
      {"permute",
       [](const TensorList& in) {
         return in[0].permute({2, 0, 1});
       },
       {randn({2, 3, 4})}},
      {"narrow", [](const TensorList& in) { return in[0].narrow(1, 1, 2); }, {randn({3, 4})}},
      {"narrow neg dim", [](const TensorList& in) { return kiln::narrow(in[0], -1, 0, 3); }, {randn({3, 4})}},
      {"slice", [](const TensorList& in) { return in[0].slice(1, 0, 4, 2); }, {randn({3, 4})}},
      {"slice neg", [](const TensorList& in) { return in[0].slice(0, -2, 3); }, {randn({3, 4})}},
      {"select", [](const TensorList& in) { return in[0].select(1, 2); }, {randn({3, 4})}},
      {"select neg", [](const TensorList& in) { return kiln::select(in[0], 0, -1); }, {randn({3, 4})}},
      {"operator[]", [](const TensorList& in) { return in[0][1]; }, {randn({3, 4})}},
      {"operator[][]", [](const TensorList& in) { return in[0][1][2] * in[0][0][0]; }, {randn({3, 4})}},
      {"expand",
       [](const TensorList& in) {
         return in[0].expand({2, 3, 4});
       },
       {randn({3, 1})}},
      {"expand -1",
       [](const TensorList& in) {
         return in[0].expand({2, -1, 4});
       },
       {randn({3, 1})}},
      {"expand_as", [](const TensorList& in) { return in[0].expand_as(in[1]) * in[1]; }, {randn({4}), randn({3, 4})}},
      {"unsqueeze", [](const TensorList& in) { return in[0].unsqueeze(1); }, {randn({3, 4})}},
      {"unsqueeze -1", [](const TensorList& in) { return kiln::unsqueeze(in[0], -1); }, {randn({3, 4})}},
      {"squeeze", [](const TensorList& in) { return in[0].squeeze(); }, {randn({3, 1, 4, 1})}},
      {"squeeze dim", [](const TensorList& in) { return in[0].squeeze(1); }, {randn({3, 1, 4})}},
      {"flatten", [](const TensorList& in) { return in[0].flatten(); }, {randn({2, 3, 4})}},
      {"flatten 1..2", [](const TensorList& in) { return kiln::flatten(in[0], 1, 2); }, {randn({2, 3, 4})}},
      {"unflatten",
       [](const TensorList& in) {
         return in[0].unflatten(1, {2, 2});
       },
       {randn({3, 4})}},
      {"contiguous", [](const TensorList& in) { return in[0].t().contiguous(); }, {randn({3, 4})}},
      {"clone", [](const TensorList& in) { return in[0].clone(); }, {randn({3, 4})}},
      {"split",
       [](const TensorList& in) {
         auto p = in[0].split(2, 1);
         return p[0] * p[1];
       },
       {randn({3, 4})}},
      {"chunk",
       [](const TensorList& in) {
         auto p = in[0].chunk(3);
         return p[0] - p[2] * p[1];
       },
       {randn({3, 4})}},
      {"unbind",
       [](const TensorList& in) {
         auto p = in[0].unbind(1);
         return p[0] * p[3];
       },
       {randn({3, 4})}},
  });
}

TEST_F(Grad, ViewChains) {
  run_cases({
      {"view of view",
       [](const TensorList& in) {
         return in[0].view({6, 4}).view({4, 6});
       },
       {randn({2, 3, 4})}},
      {"t then narrow then unsqueeze then expand",
       [](const TensorList& in) {
         return in[0].t().narrow(0, 1, 2).unsqueeze(0).expand({2, 2, 3});
       },
       {randn({3, 4})}},
      {"permute then select then transpose",
       [](const TensorList& in) {
         return in[0].permute({1, 2, 0}).select(0, 1).t();
       },
       {randn({2, 3, 4})}},
      {"slice of slice", [](const TensorList& in) { return in[0].slice(1, 1, 6, 2).slice(1, 1, 3); }, {randn({2, 6})}},
      {"narrow then reshape (copy)",
       [](const TensorList& in) { return in[0].narrow(1, 1, 2).reshape({-1}); },
       {randn({3, 4})}},
      {"reshape of transposed (copies)", [](const TensorList& in) { return in[0].t().reshape({12}); }, {randn({3, 4})}},
      {"exp of transposed", [](const TensorList& in) { return in[0].t().exp(); }, {randn({3, 4})}},
      {"sum of narrowed", [](const TensorList& in) { return in[0].narrow(0, 1, 2).sum(0); }, {randn({3, 4})}},
      {"mul of selected and transposed",
       [](const TensorList& in) { return in[0].select(1, 0) * in[1].t()[2]; },
       {randn({3, 2}), randn({3, 3})}},
      {"matmul of transposed",
       [](const TensorList& in) { return in[0].transpose(0, 1).matmul(in[1]); },
       {randn({4, 3}), randn({4, 2})}},
      {"softmax of permuted",
       [](const TensorList& in) {
         return in[0].permute({2, 0, 1}).softmax(1);
       },
       {randn({2, 3, 4})}},
      {"expanded into binary",
       [](const TensorList& in) {
         return in[0].unsqueeze(0).expand({3, 4}) / (in[1] + 3);
       },
       {randn({4}), uniform({3, 4}, 0, 1)}},
      {"gather from transposed",
       [](const TensorList& in) {
         return in[0].t().gather(1, kiln::tensor({{1, 0}, {2, 2}}));
       },
       {randn({3, 2})}},
      {"reduction over expanded",
       [](const TensorList& in) {
         return in[0].expand({5, 3}).amax(0) + in[0].expand({2, 3}).prod(0);
       },
       {away_from_zero({1, 3})}},
  });
}

}  // namespace
