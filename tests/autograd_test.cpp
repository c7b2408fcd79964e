// The autograd API, following libtorch's autograd tutorial: backward, vector-Jacobian products,
// retain_graph, higher-order gradients, grad mode, detach, hooks, retain_grad, in-place ops and
// version counters, custom functions, and grad_fn names.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <thread>

#include "expect_error.h"

namespace {

using kiln::Tensor;
using kiln::TensorList;
namespace autograd = kiln::autograd;

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// --- backward ---

TEST(Autograd, BackwardOnScalar) {
  // The tutorial's example: out = mean(3 (x + 2)^2), d out / dx = 1.5 (x + 2) = 4.5.
  Tensor x = kiln::ones({2, 2}, kiln::requires_grad());
  Tensor y = x + 2;
  Tensor z = y * y * 3;
  Tensor out = z.mean();
  EXPECT_EQ(out.item<float>(), 27.0f);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_FALSE(x.grad().defined());
  out.backward();
  EXPECT_EQ(vals(x.grad()), std::vector<double>(4, 4.5));
  EXPECT_FALSE(y.grad().defined());  // non-leaves keep no gradient unless retain_grad()
}

TEST(Autograd, BackwardWithGradientIsAVectorJacobianProduct) {
  Tensor x = kiln::tensor({1.0, 2.0, 3.0}, kiln::requires_grad());
  Tensor y = x * x * 2;  // dy_i/dx_i = 4 x_i
  y.backward(kiln::tensor({0.1, 1.0, 0.0001}));
  EXPECT_TRUE(kiln::allclose(x.grad(), kiln::tensor({0.4, 8.0, 0.0012})));
  // The gradient must have the output's shape.
  Tensor x2 = kiln::randn({2, 3}, kiln::requires_grad());
  EXPECT_THROW((x2 * 2).backward(kiln::ones({3, 2})), kiln::Error);
}

TEST(Autograd, GradientsAccumulateIntoLeaves) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  (x * 3).sum().backward();
  (x * x).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{5, 7}));
  // Zeroing as optimizers do.
  x.mutable_grad().zero_();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 0}));
  (x * 3).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 3}));
  x.mutable_grad() = Tensor();
  (x * 4).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 4}));
}

TEST(Autograd, FanOutAndShared) {
  Tensor x = kiln::tensor({2.0}, kiln::requires_grad());
  Tensor a = x * x, b = x.exp();
  (a * b + a + x).sum().backward();  // d/dx [x^2 e^x + x^2 + x]
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(x.grad().item<double>(), 4 * e2 + 4 * e2 + 4 + 1, 1e-4);
}

TEST(Autograd, RetainGraph) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = (x * x).sum();
  y.backward({}, true);
  y.backward();  // the graph was kept: works, and accumulates
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 8}));
  try {
    y.backward();
    ADD_FAILURE() << "second backward without retain_graph must throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("retain_graph=True"), std::string::npos);
  }
  // kiln::Error is a std::runtime_error.
  Tensor z = (x * x).sum();
  z.backward();
  EXPECT_THROW(z.backward(), std::runtime_error);
}

TEST(Autograd, BackwardInputsFillsOnlyThoseLeaves) {
  Tensor a = kiln::tensor({1.0}, kiln::requires_grad()), b = kiln::tensor({2.0}, kiln::requires_grad());
  (a * b).sum().backward({}, std::nullopt, false, TensorList{a});
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{2}));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Autograd, GradOfBroadcastInputsHasInputShape) {
  Tensor a = kiln::randn({3, 1}, kiln::requires_grad());
  Tensor b = kiln::randn({4}, kiln::requires_grad());
  Tensor c = kiln::randn({}, kiln::requires_grad());
  (a * b + c).sum().backward();
  EXPECT_EQ(a.grad().sizes().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(b.grad().sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(c.grad().sizes().vec(), (std::vector<int64_t>{}));
  EXPECT_NEAR(c.grad().item<float>(), 12.0f, 1e-6);
  EXPECT_TRUE(kiln::allclose(a.grad(), b.sum().expand({3, 1})));
  EXPECT_TRUE(kiln::allclose(b.grad(), a.sum().expand({4})));
  Tensor e = kiln::randn({2, 1}, kiln::requires_grad());
  e.expand({3, 2, 5}).sum().backward();
  EXPECT_EQ(vals(e.grad()), (std::vector<double>{15, 15}));
}

// --- autograd::grad and higher orders ---

TEST(Autograd, GradAndHigherOrder) {
  Tensor x = kiln::tensor({1.0, 2.0, 3.0}, kiln::requires_grad());
  Tensor y = (x * x * x).sum();
  TensorList g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{3, 12, 27}));
  EXPECT_TRUE(g[0].requires_grad());
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad alone
  TensorList g2 = autograd::grad({g[0].sum()}, {x}, {}, std::nullopt, true);
  EXPECT_EQ(vals(g2[0]), (std::vector<double>{6, 12, 18}));
  TensorList g3 = autograd::grad({g2[0].sum()}, {x});
  EXPECT_EQ(vals(g3[0]), (std::vector<double>{6, 6, 6}));
  EXPECT_FALSE(g3[0].requires_grad());  // without create_graph the result is detached

  // Without create_graph the first gradient is a constant.
  TensorList plain = autograd::grad({(x * x).sum()}, {x});
  EXPECT_FALSE(plain[0].requires_grad());

  // backward(create_graph) leaves a differentiable .grad.
  Tensor w = kiln::tensor({2.0}, kiln::requires_grad());
  (w * w * w).sum().backward({}, std::nullopt, true);
  EXPECT_TRUE(w.grad().requires_grad());
  EXPECT_EQ(vals(autograd::grad({w.grad().sum()}, {w})[0]), (std::vector<double>{12}));
}

TEST(Autograd, GradManyInputsOutputsAndUnused) {
  Tensor a = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor b = kiln::tensor({3.0}, kiln::requires_grad());
  Tensor unused = kiln::tensor({5.0}, kiln::requires_grad());
  Tensor y1 = a * b, y2 = (a * a).sum();
  TensorList g = autograd::grad({y1, y2}, {a, b, unused}, {kiln::ones({2}), kiln::tensor(2.0)}, std::nullopt, false,
                                /*allow_unused=*/true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{3 + 4, 3 + 8}));
  EXPECT_EQ(vals(g[1]), (std::vector<double>{3}));
  EXPECT_FALSE(g[2].defined());
  EXPECT_THROW(autograd::grad({(a * b).sum()}, {unused}), kiln::Error);
  // Gradients of a leaf with respect to itself, and of an output with respect to itself.
  EXPECT_EQ(vals(autograd::grad({a}, {a}, {kiln::ones({2})})[0]), (std::vector<double>{1, 1}));
  Tensor s = (a * 2).sum();
  EXPECT_EQ(vals(autograd::grad({s}, {s})[0]), (std::vector<double>{1}));
}

// --- grad mode and detach ---

TEST(Autograd, NoGradGuard) {
  Tensor x = kiln::ones({2}, kiln::requires_grad());
  EXPECT_TRUE(autograd::GradMode::is_enabled());
  {
    autograd::NoGradGuard guard;
    EXPECT_FALSE(autograd::GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(y.grad_fn());
    EXPECT_FALSE(x.unsqueeze(0).requires_grad());  // views too
    {
      autograd::AutoGradMode enable(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE((x * 2).requires_grad());
    x.add_(1);  // in-place on a leaf that requires grad is allowed here (an optimizer step)
  }
  EXPECT_TRUE(autograd::GradMode::is_enabled());
  EXPECT_EQ(vals(x), (std::vector<double>{2, 2}));
  EXPECT_TRUE((x * 2).requires_grad());
  // Grad mode is per thread.
  bool other_thread_enabled = false;
  {
    autograd::NoGradGuard guard;
    std::thread t([&] { other_thread_enabled = autograd::GradMode::is_enabled(); });
    t.join();
  }
  EXPECT_TRUE(other_thread_enabled);
}

TEST(Autograd, Detach) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_TRUE(d.is_alias_of(y));  // shares storage
  EXPECT_EQ(vals(d), (std::vector<double>{2, 4}));
  // Gradient stops at a detached value.
  (y * d).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 8}));
  Tensor z = x * 3;
  z.detach_();
  EXPECT_FALSE(z.requires_grad());
  EXPECT_FALSE(z.grad_fn());
}

TEST(Autograd, RequiresGradFlags) {
  Tensor x = kiln::zeros({2});
  EXPECT_FALSE(x.requires_grad());
  x.requires_grad_();
  EXPECT_TRUE(x.requires_grad());
  x.set_requires_grad(false);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_TRUE(kiln::zeros({2}, kiln::requires_grad()).requires_grad());
  EXPECT_TRUE(kiln::zeros({2}, kiln::dtype(kiln::kDouble).requires_grad(true)).requires_grad());
  Tensor leaf = kiln::ones({2}, kiln::requires_grad());
  Tensor y = leaf * 2;
  EXPECT_THROW_WITH(y.requires_grad_(false), "you can only change requires_grad flags of leaf variables");
  y.requires_grad_(true);  // allowed, as in PyTorch: nothing changes
  EXPECT_TRUE(y.requires_grad());
  // Comparisons, argmax and integer results never require grad.
  EXPECT_FALSE((leaf > 0).requires_grad());
  EXPECT_FALSE(leaf.argmax().requires_grad());
  EXPECT_FALSE(leaf.to(kiln::kLong).requires_grad());
  EXPECT_TRUE(leaf.to(kiln::kDouble).requires_grad());
}

// --- hooks and retain_grad ---

TEST(Autograd, HooksModifyAndObserve) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor seen;
  x.register_hook([&](Tensor g) { seen = g; });                         // void hook: observes
  unsigned doubling = x.register_hook([](Tensor g) { return g * 2; });  // replaces the gradient
  (x * x).sum().backward();
  EXPECT_EQ(vals(seen), (std::vector<double>{2, 4}));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 8}));
  x.remove_hook(doubling);
  x.mutable_grad() = Tensor();
  (x * x).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 4}));

  // On a non-leaf, the hook changes what flows on to the leaves.
  Tensor a = kiln::tensor({3.0}, kiln::requires_grad());
  Tensor b = a * 2;
  b.register_hook([](Tensor g) { return g * 10; });
  (b * b).sum().backward();  // d/db = 2b = 12, times 10, times 2
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{240}));
  EXPECT_THROW(kiln::ones({1}).register_hook([](Tensor g) { return g; }), kiln::Error);
}

TEST(Autograd, RetainGrad) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = x * 2;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  Tensor z = (y * y).sum();
  z.backward({}, true);
  EXPECT_EQ(vals(y.grad()), (std::vector<double>{4, 8}));
  z.backward();  // retained gradients accumulate, as leaves' do
  EXPECT_EQ(vals(y.grad()), (std::vector<double>{8, 16}));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{16, 32}));
}

// --- in-place ops ---

TEST(Autograd, InPlaceOnLeafRequiringGradThrows) {
  Tensor x = kiln::ones({2}, kiln::requires_grad());
  EXPECT_THROW_WITH(x.add_(1), "a leaf Variable that requires grad is being used in an in-place operation");
  EXPECT_THROW_WITH(x.mul_(2), "a leaf Variable that requires grad");
  EXPECT_THROW_WITH(x.zero_(), "a leaf Variable that requires grad");
  EXPECT_THROW_WITH(x += 1, "a leaf Variable that requires grad");
  EXPECT_EQ(vals(x), (std::vector<double>{1, 1}));  // untouched
}

TEST(Autograd, VersionCounter) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = x * 1.5;
  EXPECT_EQ(y._version(), 0);
  Tensor z = y.exp();  // saves its output
  z.add_(1);
  EXPECT_EQ(z._version(), 1);
  EXPECT_THROW_WITH(z.sum().backward(), "modified by an inplace operation");
  // An input saved for backward, modified in place afterwards.
  Tensor a = x * 2;
  Tensor b = a * a;
  a.mul_(3);
  try {
    b.sum().backward();
    ADD_FAILURE() << "expected the version-counter error";
  } catch (const kiln::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("one of the variables needed for gradient computation has been modified by an inplace "
                       "operation"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("is at version 1; expected version 0 instead"), std::string::npos) << msg;
  }
  // A view shares the version counter of its base.
  Tensor c = x * 2;
  Tensor v = c.narrow(0, 0, 1);
  Tensor d = c.sin();
  kiln::autograd::NoGradGuard guard;
  v.mul_(2);
  EXPECT_EQ(c._version(), 1);
  EXPECT_EQ(v._version(), 1);
}

TEST(Autograd, InPlaceOnNonLeafRebasesHistory) {
  auto x_of = [] { return kiln::tensor({1.0, 2.0, 4.0}, kiln::dtype(kiln::kDouble).requires_grad(true)); };
  struct Case {
    const char* what;
    std::function<Tensor(const Tensor&)> f;  // builds y from x with in-place ops
    std::vector<double> grad;                // d sum(y) / dx at x = {1, 2, 4}
  };
  const std::vector<Case> cases = {
      {"add_",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.add_(1);
         return y;
       },
       {2, 2, 2}},
      {"+= tensor",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y += x * x;
         return y;
       },
       {4, 6, 10}},
      {"sub_ alpha",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.sub_(x, 3);
         return y;
       },
       {-1, -1, -1}},
      {"mul_ scalar",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.mul_(3);
         return y;
       },
       {6, 6, 6}},
      {"*= tensor",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y *= x;
         return y;
       },
       {4, 8, 16}},
      {"div_",
       [](const Tensor& x) {
         Tensor y = x * x;
         y.div_(x * 2);
         return y;
       },
       {0.5, 0.5, 0.5}},
      {"/= scalar",
       [](const Tensor& x) {
         Tensor y = x + 0;
         y /= 4;
         return y;
       },
       {0.25, 0.25, 0.25}},
      {"sqrt_",
       [](const Tensor& x) {
         Tensor y = x * 4;
         y.sqrt_();
         return y;
       },
       {1, 1 / std::sqrt(2.0), 0.5}},
      {"relu_",
       [](const Tensor& x) {
         Tensor y = x - 1.5;
         y.relu_();
         return y;
       },
       {0, 1, 1}},
      {"clamp_",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.clamp_(1.5, 3);
         return y;
       },
       {0, 1, 0}},
      {"masked_fill_",
       [](const Tensor& x) {
         Tensor y = x * 3;
         y.masked_fill_(x > 3, 0);
         return y;
       },
       {3, 3, 0}},
      {"addcmul_",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.addcmul_(x, x, 0.5);
         return y;
       },
       {2, 3, 5}},
      {"addcdiv_",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.addcdiv_(x, kiln::full({3}, 2.0, kiln::kDouble));
         return y;
       },
       {1.5, 1.5, 1.5}},
      {"lerp_",
       [](const Tensor& x) {
         Tensor y = x * 1;
         y.lerp_(x * 3, 0.5);
         return y;
       },
       {2, 2, 2}},
      {"copy_",
       [](const Tensor& x) {
         Tensor y = kiln::zeros({3}, kiln::kDouble);
         y.copy_(x * 5);
         return y;
       },
       {5, 5, 5}},
      {"copy_ from a leaf",
       [](const Tensor& x) {
         Tensor y = kiln::zeros({3}, kiln::kDouble);
         y.copy_(x);
         return y * 2;
       },
       {2, 2, 2}},
      {"chain",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.add_(x).mul_(x).sub_(1);
         return y;
       },
       {6, 12, 24}},
      {"use before in-place",
       [](const Tensor& x) {
         Tensor y = x * 2;
         Tensor z = y + x;
         y.add_(1);
         return z + y;
       },
       {5, 5, 5}},
  };
  for (const auto& c : cases) {
    Tensor x = x_of();
    try {
      Tensor y = c.f(x);
      y.sum().backward();
      EXPECT_TRUE(kiln::allclose(x.grad(), kiln::tensor(c.grad, kiln::kDouble))) << c.what << ": got " << x.grad();
    } catch (const kiln::Error& e) {
      ADD_FAILURE() << c.what << ": " << e.what();
    }
  }
}

TEST(Autograd, InPlaceThroughViewsOfNonLeaves) {
  // Writes into a view of a tensor with history give the base new history (PyTorch's CopySlices).
  auto x_of = [] { return kiln::tensor({1.0, 2.0, 4.0}, kiln::dtype(kiln::kDouble).requires_grad(true)); };
  struct Case {
    const char* what;
    std::function<Tensor(const Tensor&)> f;
    std::vector<double> grad;  // d sum(f(x)) / dx, as PyTorch computes it
  };
  const std::vector<Case> cases = {
      {"narrow().mul_",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.narrow(0, 0, 1).mul_(3);
         return y;
       },
       {6, 2, 2}},
      {"select().copy_",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.select(0, 0).copy_(x[2] * 5);
         return y;
       },
       {0, 2, 7}},
      {"[1].zero_",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y[1].zero_();
         return y;
       },
       {2, 0, 2}},
      {"slice().fill_",
       [](const Tensor& x) {
         Tensor y = x * 2;
         y.slice(0, 0, 3, 2).fill_(1);
         return y;
       },
       {0, 2, 0}},
      {"view made before a write to the base",
       [](const Tensor& x) {
         Tensor y = x * 2;
         Tensor v = y[1];
         y.mul_(3);
         return v;
       },
       {0, 6, 0}},
      {"2-D: transposed view, then add_",
       [](const Tensor& x) {
         Tensor y = x.unsqueeze(0).expand({2, 3}) * 1;  // rows are x
         y.t()[2].add_(y.t()[0] * 10);                  // column 2 += 10 * column 0
         return y;
       },
       {22, 2, 2}},
  };
  for (const auto& c : cases) {
    Tensor x = x_of();
    try {
      c.f(x).sum().backward();
      EXPECT_TRUE(kiln::allclose(x.grad(), kiln::tensor(c.grad, kiln::kDouble))) << c.what << ": got " << x.grad();
    } catch (const kiln::Error& e) {
      ADD_FAILURE() << c.what << ": " << e.what();
    }
  }
  // A view of a leaf that requires grad cannot be written under autograd.
  Tensor leaf = x_of();
  EXPECT_THROW_WITH(leaf[0].mul_(2), "a view of a leaf Variable that requires grad");
}

TEST(Autograd, InPlaceOverwriteStopsGradient) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = x * 2;
  Tensor keep = y + x;  // uses y before it is overwritten (and saves nothing)
  y.fill_(3);
  EXPECT_EQ(vals(y), (std::vector<double>{3, 3}));
  EXPECT_FALSE(y.requires_grad());
  (keep.sum() + (y * x).sum()).backward();  // keep: 3x; y * x: 3
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{6, 6}));
}

// --- custom functions ---

// libtorch's tutorial: a linear function with a hand-written backward, an optional bias.
struct LinearFunction : public autograd::Function<LinearFunction> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor input, Tensor weight, Tensor bias = Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    Tensor output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static kiln::tensor_list backward(autograd::AutogradContext* ctx, kiln::tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    Tensor input = saved[0], weight = saved[1], bias = saved[2];
    Tensor grad_output = grad_outputs[0];
    Tensor grad_bias;
    if (bias.defined()) grad_bias = grad_output.sum(0);
    return {grad_output.mm(weight), grad_output.t().mm(input), grad_bias};
  }
};

// A function of a tensor and non-tensor arguments, keeping them in saved_data.
struct ScaleShift : public autograd::Function<ScaleShift> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double scale, int64_t power, bool negate) {
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["power"] = power;
    ctx->saved_data["negate"] = negate;
    ctx->save_for_backward({x});
    Tensor y = x.pow(power) * scale;
    return negate ? -y : y;
  }
  static kiln::tensor_list backward(autograd::AutogradContext* ctx, kiln::tensor_list g) {
    const double scale = ctx->saved_data["scale"].toDouble();
    const int64_t power = ctx->saved_data["power"].toInt();
    const bool negate = ctx->saved_data["negate"].toBool();
    Tensor x = ctx->get_saved_variables()[0];
    Tensor grad = g[0] * x.pow(power - 1) * (scale * double(power) * (negate ? -1 : 1));
    return {grad, Tensor(), Tensor(), Tensor()};
  }
};

// Two outputs, one of them not differentiable.
struct SplitSign : public autograd::Function<SplitSign> {
  static kiln::tensor_list forward(autograd::AutogradContext* ctx, Tensor x, Tensor y) {
    Tensor sum = x + y, sign = (x > y).to(kiln::kFloat);
    ctx->mark_non_differentiable({sign});
    ctx->saved_data["needs_x"] = ctx->needs_input_grad(0);
    ctx->saved_data["needs_y"] = ctx->needs_input_grad(1);
    return {sum, sign};
  }
  static kiln::tensor_list backward(autograd::AutogradContext*, kiln::tensor_list g) { return {g[0], g[0] * 2}; }
};

TEST(Autograd, CustomFunctionLinear) {
  Tensor x = kiln::randn({2, 3}, kiln::dtype(kiln::kDouble).requires_grad(true));
  Tensor w = kiln::randn({4, 3}, kiln::dtype(kiln::kDouble).requires_grad(true));
  Tensor b = kiln::randn({4}, kiln::dtype(kiln::kDouble).requires_grad(true));
  Tensor y = LinearFunction::apply(x, w, b);
  EXPECT_TRUE(kiln::allclose(y, kiln::linear(x, w, b)));
  EXPECT_NE(y.grad_fn()->name().find("LinearFunction"), std::string::npos) << y.grad_fn()->name();
  EXPECT_EQ(y.grad_fn()->name().rfind("torch::autograd::CppNode<", 0), 0u) << y.grad_fn()->name();
  y.sum().backward();
  TensorList expected = autograd::grad({kiln::linear(x, w, b).sum()}, {x, w, b});
  EXPECT_TRUE(kiln::allclose(x.grad(), expected[0]));
  EXPECT_TRUE(kiln::allclose(w.grad(), expected[1]));
  EXPECT_TRUE(kiln::allclose(b.grad(), expected[2]));
  // Without the bias: backward returns an extra undefined gradient, which is allowed.
  Tensor x2 = kiln::randn({2, 3}, kiln::requires_grad());
  Tensor w2 = kiln::randn({4, 3}, kiln::requires_grad());
  LinearFunction::apply(x2, w2).sum().backward();
  EXPECT_TRUE(kiln::allclose(x2.grad(), w2.sum(0).expand({2, 3})));
}

TEST(Autograd, CustomFunctionSavedData) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor y = ScaleShift::apply(x, 0.5, int64_t(3), true);  // -0.5 x^3
  EXPECT_EQ(vals(y), (std::vector<double>{-0.5, -4}));
  y.sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{-1.5, -6}));
  // Through other ops on both sides, and with create_graph (the backward uses kiln ops).
  Tensor z = kiln::tensor({3.0}, kiln::requires_grad());
  Tensor out = ScaleShift::apply(z * 2, 1.0, int64_t(2), false).sum();  // (2z)^2
  Tensor g = autograd::grad({out}, {z}, {}, std::nullopt, true)[0];
  EXPECT_EQ(vals(g), (std::vector<double>{24}));
  EXPECT_EQ(vals(autograd::grad({g.sum()}, {z})[0]), (std::vector<double>{8}));
  // IValue conversions.
  autograd::IValue i(int64_t(4)), d(2.5), b(true);
  EXPECT_EQ(i.toInt(), 4);
  EXPECT_EQ(i.toDouble(), 4.0);
  EXPECT_EQ(d.toDouble(), 2.5);
  EXPECT_TRUE(b.toBool());
  EXPECT_TRUE(i.isInt() && d.isDouble() && b.isBool());
  EXPECT_THROW(d.toBool(), kiln::Error);
}

TEST(Autograd, CustomFunctionMultipleOutputs) {
  Tensor x = kiln::tensor({1.0, 5.0}, kiln::requires_grad());
  Tensor y = kiln::tensor({3.0, 2.0});
  TensorList out = SplitSign::apply(x, y);
  EXPECT_EQ(vals(out[1]), (std::vector<double>{0, 1}));
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  (out[0] * 3).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 3}));
  EXPECT_FALSE(y.grad().defined());
  // The context saw which inputs needed a gradient.
  auto* node = dynamic_cast<autograd::CustomNodeBase*>(out[0].grad_fn().get());
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->ctx.saved_data["needs_x"].toBool());
  EXPECT_FALSE(node->ctx.saved_data["needs_y"].toBool());
}

TEST(Autograd, CustomFunctionVersionCounter) {
  Tensor x = kiln::tensor({1.0, 2.0}, kiln::requires_grad());
  Tensor h = x * 1;
  Tensor y = ScaleShift::apply(h, 1.0, int64_t(2), false);
  h.add_(1);
  EXPECT_THROW_WITH(y.sum().backward(), "modified by an inplace operation");
  // Without requires_grad inputs, a custom function records nothing.
  Tensor plain = ScaleShift::apply(kiln::ones({2}), 2.0, int64_t(1), false);
  EXPECT_FALSE(plain.requires_grad());
  EXPECT_EQ(vals(plain), (std::vector<double>{2, 2}));
}

TEST(Autograd, GradientsAtTies) {
  // max(dim) sends the gradient to the selected index; max() and amax share it among ties.
  Tensor x = kiln::tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}, kiln::requires_grad());
  std::get<0>(x.max(1)).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 1, 0, 1, 0, 0}));
  x.mutable_grad() = Tensor();
  std::get<0>(kiln::min(x, 0, true)).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 0, 0, 0, 1, 1}));
  x.mutable_grad() = Tensor();
  x.max().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0, 0, 0}));
  x.mutable_grad() = Tensor();
  x.amax(1).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0.5, 0.5, 0}));
  // relu at 0 and abs at 0 have gradient 0, as in PyTorch.
  Tensor z = kiln::tensor({0.0, -1.0, 2.0}, kiln::requires_grad());
  (z.relu() + z.abs()).sum().backward();
  EXPECT_EQ(vals(z.grad()), (std::vector<double>{0, -1, 2}));
  // relu as libtorch 1.13's (clamp_min and threshold_backward): NaN stays NaN and passes its
  // gradient; negatives give +0.
  Tensor n = kiln::tensor({std::nan(""), -1.0, 0.0, 2.0}, kiln::requires_grad());
  Tensor r = n.relu();
  r.sum().backward();
  const std::vector<double> rv = vals(r);
  EXPECT_TRUE(std::isnan(rv[0]));
  EXPECT_EQ(rv[1], 0.0);
  EXPECT_FALSE(std::signbit(rv[1]));
  EXPECT_EQ(rv[2], 0.0);
  EXPECT_EQ(rv[3], 2.0);
  EXPECT_EQ(vals(n.grad()), (std::vector<double>{1, 0, 0, 1}));
  // maximum and minimum at ties share the gradient equally.
  Tensor a = kiln::tensor({1.0, 2.0}, kiln::requires_grad()), b = kiln::tensor({1.0, 3.0}, kiln::requires_grad());
  kiln::maximum(a, b).sum().backward();
  EXPECT_EQ(vals(a.grad()), (std::vector<double>{0.5, 0}));
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{0.5, 1}));
}

// --- grad_fn ---

TEST(Autograd, GradFnNames) {
  Tensor x = kiln::randn({3, 4}, kiln::requires_grad());
  EXPECT_FALSE(x.grad_fn());
  EXPECT_EQ((x * x).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ((x + x).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((x - x).grad_fn()->name(), "SubBackward0");
  EXPECT_EQ((x / x).grad_fn()->name(), "DivBackward0");
  EXPECT_EQ((-x).grad_fn()->name(), "NegBackward0");
  EXPECT_EQ(x.exp().grad_fn()->name(), "ExpBackward0");
  EXPECT_EQ(x.tanh().grad_fn()->name(), "TanhBackward0");
  EXPECT_EQ(x.abs().grad_fn()->name(), "AbsBackward0");
  EXPECT_EQ(x.pow(x).grad_fn()->name(), "PowBackward1");
  EXPECT_EQ(x.sum(0).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(x.amax(0).grad_fn()->name(), "AmaxBackward0");
  EXPECT_EQ(x.clone().grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(x.to(kiln::kDouble).grad_fn()->name(), "ToCopyBackward0");
  EXPECT_EQ(x.view({12}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.permute({1, 0}).grad_fn()->name(), "PermuteBackward0");
  EXPECT_EQ(x.unsqueeze(0).expand({2, 3, 4}).grad_fn()->name(), "ExpandBackward0");
  EXPECT_EQ(kiln::cat({x, x}).grad_fn()->name(), "CatBackward0");
  EXPECT_EQ(kiln::where(x > 0, x, x).grad_fn()->name(), "WhereBackward0");
  EXPECT_EQ(x.index_select(0, kiln::tensor({0})).grad_fn()->name(), "IndexSelectBackward0");
  EXPECT_EQ(x.gather(0, kiln::zeros({1, 1}, kiln::kLong)).grad_fn()->name(), "GatherBackward0");
  // The graph is walkable: y = x * 2 + 1 -> AddBackward0 -> MulBackward0 -> AccumulateGrad.
  Tensor y = x * x + x;
  auto add = y.grad_fn();
  ASSERT_EQ(add->next_edges.size(), 2u);
  EXPECT_EQ(add->next_edges[0].fn->name(), "MulBackward0");
  EXPECT_EQ(add->next_edges[1].fn->name(), "torch::autograd::AccumulateGrad");
}

}  // namespace

// Under create_graph, .grad takes a copy of a gradient it does not own (sum's backward is an
// expand of one element, whose in-place zeroing is refused), as libtorch's AccumulateGrad does.
TEST(Autograd, CreateGraphGradientIsOwnedByGrad) {
  Tensor v = kiln::ones({3}, kiln::requires_grad());
  v.sum().backward({}, /*retain_graph=*/true, /*create_graph=*/true);
  EXPECT_EQ(v.grad().to_vector<float>(), std::vector<float>({1, 1, 1}));
  v.mutable_grad().zero_();
  v.sum().backward();
  EXPECT_EQ(v.grad().to_vector<float>(), std::vector<float>({1, 1, 1}));
}
