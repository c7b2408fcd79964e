// Autograd corners where kiln's answers must be libtorch's (issue 30): hooks and retain_grad on
// tensors later modified in place, custom functions' mark_dirty and their gradients' shapes,
// undefined gradients, backward(inputs=...) with non-leaf inputs, and nodes that cannot reach the
// requested inputs. Expected values and messages are libtorch 1.13's for the same programs.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Function;
using torch::autograd::variable_list;

std::vector<double> doubles(const torch::Tensor& t) { return t.to_vector<double>(); }

struct Dirty : Function<Dirty> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2}; }
};

// Writes through data_ptr, which the version counter does not see: mark_dirty must bump it.
struct DirtyThroughMemory : Function<DirtyThroughMemory> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    x.data_ptr<float>()[0] = 5;
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

struct ReturnsDirtyTwice : Function<ReturnsDirtyTwice> {
  static variable_list forward(AutogradContext* ctx, torch::Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return {x, x};
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};

struct WrongShape : Function<WrongShape> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x) { return x * 2; }
  static variable_list backward(AutogradContext*, variable_list) { return {torch::ones({3})}; }
};

struct BroadcastGradient : Function<BroadcastGradient> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x) { return x * 2; }
  static variable_list backward(AutogradContext*, variable_list) { return {torch::ones({2, 2})}; }
};

struct NoGradientForX : Function<NoGradientForX> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x, torch::Tensor y) { return x * y; }
  static variable_list backward(AutogradContext*, variable_list g) { return {torch::Tensor(), g[0]}; }
};

int counted_calls = 0;
struct Counted : Function<Counted> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x) { return x * 2; }
  static variable_list backward(AutogradContext*, variable_list g) {
    ++counted_calls;
    return {g[0] * 2};
  }
};

}  // namespace

TEST(AutogradCorners, HookSeesTheValueItWasRegisteredOn) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor y = x * 2, seen;
  y.register_hook([&](torch::Tensor g) { seen = g.clone(); });
  y.mul_(3);
  (y * 5).sum().backward();
  EXPECT_EQ(doubles(seen), (std::vector<double>{15, 15}));  // the gradient of y before mul_(3)
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{30, 30}));
}

TEST(AutogradCorners, RetainGradFollowsInPlaceChanges) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor y = x * 2;
  y.retain_grad();
  y.mul_(3);
  y.mul_(5);
  (y * 7).sum().backward();
  EXPECT_EQ(doubles(y.grad()), (std::vector<double>{7, 7}));  // the gradient of y's latest value
  torch::Tensor z = x * 2, seen;
  z.mul_(3);
  z.register_hook([&](torch::Tensor g) { seen = g.clone(); });
  z.retain_grad();
  (z * 5).sum().backward();
  EXPECT_EQ(doubles(seen), (std::vector<double>{5, 5}));
  EXPECT_EQ(doubles(z.grad()), (std::vector<double>{5, 5}));
}

TEST(AutogradCorners, HooksAndRetainGradRunInRegistrationOrder) {
  {
    torch::Tensor x = torch::ones({2}, torch::requires_grad());
    torch::Tensor y = x * 2;
    y.retain_grad();
    y.register_hook([](torch::Tensor g) { return g * 10; });
    y.sum().backward();
    EXPECT_EQ(doubles(y.grad()), (std::vector<double>{1, 1}));
    EXPECT_EQ(doubles(x.grad()), (std::vector<double>{20, 20}));
  }
  {
    torch::Tensor x = torch::ones({2}, torch::requires_grad());
    torch::Tensor y = x * 2;
    y.register_hook([](torch::Tensor g) { return g * 10; });
    y.retain_grad();
    y.sum().backward();
    EXPECT_EQ(doubles(y.grad()), (std::vector<double>{10, 10}));
  }
  {  // a replacing hook registered before an in-place change, retain_grad with it
    torch::Tensor x = torch::ones({2}, torch::requires_grad());
    torch::Tensor y = x * 2, seen;
    y.register_hook([&](torch::Tensor g) {
      seen = g.clone();
      return g * 10;
    });
    y.retain_grad();
    y.mul_(3);
    (y * 5).sum().backward();
    EXPECT_EQ(doubles(seen), (std::vector<double>{15, 15}));
    EXPECT_EQ(doubles(y.grad()), (std::vector<double>{5, 5}));
    EXPECT_EQ(doubles(x.grad()), (std::vector<double>{300, 300}));
  }
}

TEST(AutogradCorners, MarkDirtyRebasesAndBumpsTheVersion) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor a = x * 1;
  EXPECT_EQ(a._version(), 0);
  torch::Tensor b = Dirty::apply(a);
  EXPECT_EQ(a._version(), 2);  // mul_ and mark_dirty
  EXPECT_TRUE(b.is_same(a));
  EXPECT_EQ(b.grad_fn()->name(), "torch::autograd::CppNode<(anonymous namespace)::Dirty>");
  b.sum().backward();
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{2, 2}));

  torch::Tensor c = x * 1;
  torch::Tensor saved = c * c;  // saves c
  DirtyThroughMemory::apply(c);
  EXPECT_EQ(c._version(), 1);
  EXPECT_THROW_WITH(saved.sum().backward(), "is at version 1; expected version 0 instead");
  EXPECT_THROW_WITH(Dirty::apply(x), "a leaf Variable that requires grad has been used in an in-place operation.");
}

// libtorch 1.13 accepts this and rebases the input twice; kiln refuses it.
TEST(AutogradCorners, TheSameDirtyInputTwiceThrows) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor a = x * 1;
  EXPECT_THROW_WITH(ReturnsDirtyTwice::apply(a), "are the same tensor, an input marked dirty");
}

TEST(AutogradCorners, CustomGradientsMustFitTheirInputs) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  EXPECT_THROW_WITH(WrongShape::apply(x).sum().backward(),
                    "returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]");
  torch::Tensor x2 = torch::ones({2}, torch::requires_grad());
  BroadcastGradient::apply(x2).sum().backward();  // [2, 2] sums down to [2], as libtorch
  EXPECT_EQ(doubles(x2.grad()), (std::vector<double>{2, 2}));
}

TEST(AutogradCorners, AnUndefinedCustomGradientLeavesGradUndefined) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad()), y = torch::ones({2}, torch::requires_grad());
  NoGradientForX::apply(x, y).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(doubles(y.grad()), (std::vector<double>{1, 1}));
}

TEST(AutogradCorners, BackwardInputsMayBeNonLeaves) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor h = x * 2;
  torch::Tensor out = (h * h).sum();
  out.backward({}, /*retain_graph=*/true, false, torch::TensorList{h});
  EXPECT_EQ(doubles(h.grad()), (std::vector<double>{4, 4}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_THROW_WITH(out.backward({}, true, false, torch::TensorList{}),
                    "'inputs' argument to backward cannot be empty");
  EXPECT_THROW_WITH(torch::autograd::grad({out}, {}), "grad requires non-empty inputs.");
}

TEST(AutogradCorners, NodesThatCannotReachTheInputsDoNotRun) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad()), w = torch::ones({2}, torch::requires_grad());
  torch::Tensor out = (x * 3 + Counted::apply(w)).sum();
  counted_calls = 0;
  torch::autograd::grad({out}, {x}, {}, /*retain_graph=*/true);
  EXPECT_EQ(counted_calls, 0);
  out.backward({}, true, false, torch::TensorList{x});
  EXPECT_EQ(counted_calls, 0);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{3, 3}));
  out.backward({}, true);
  EXPECT_EQ(counted_calls, 1);
  EXPECT_EQ(doubles(w.grad()), (std::vector<double>{2, 2}));
}
