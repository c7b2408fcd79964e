// Bad inputs: every one throws kiln::Error (a std::runtime_error) at the user's call, before any
// flush, with a message that names the op and the shapes or dtypes involved; and afterwards the
// segment still works, including values recorded before the error.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace {

using kiln::Tensor;

// Runs `stmt`, which must throw kiln::Error containing each of `parts`. Unless `flushes` says it
// may, the error must come before any flush. Then checks that a value recorded before the error,
// and a fresh computation, both still compute.
void expect_error(const std::function<void()>& stmt, const std::vector<std::string>& parts, bool flushes = false) {
  kiln::sync();
  Tensor pending = kiln::arange(4, kiln::kFloat) * 3;  // recorded before the error, not computed
  const int64_t before = kiln::stats().flushes;
  try {
    stmt();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const kiln::Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "\"" << p << "\" not in: " << msg;
    if (!flushes) {
      EXPECT_EQ(kiln::stats().flushes, before) << "the error came at a flush: " << msg;
    }
    static_assert(std::is_base_of_v<std::runtime_error, kiln::Error>);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a kiln::Error, got another exception: " << e.what();
  }
  EXPECT_EQ(pending.sum().item<float>(), 18.0f);
  EXPECT_EQ((kiln::ones({2, 2}) * 2 + 1).sum().item<float>(), 12.0f);
}

#define EXPECT_ERROR(stmt, ...)                 \
  do {                                          \
    SCOPED_TRACE(#stmt);                        \
    expect_error([&] { stmt; }, {__VA_ARGS__}); \
  } while (0)
#define EXPECT_ERROR_AT_FLUSH(stmt, ...)              \
  do {                                                \
    SCOPED_TRACE(#stmt);                              \
    expect_error([&] { stmt; }, {__VA_ARGS__}, true); \
  } while (0)

TEST(Errors, BroadcastShapes) {
  const Tensor a23 = kiln::ones({2, 3});
  Tensor b4 = kiln::ones({4});
  EXPECT_ERROR(a23 + b4, "add", "[2, 3]", "[4]");
  EXPECT_ERROR(a23 - b4, "sub", "[2, 3]", "[4]");
  EXPECT_ERROR(a23 * b4, "mul", "[2, 3]", "[4]");
  EXPECT_ERROR(a23 / b4, "div", "[2, 3]", "[4]");
  EXPECT_ERROR(kiln::maximum(a23, b4), "maximum", "[2, 3]", "[4]");
  EXPECT_ERROR(kiln::minimum(a23, b4), "minimum");
  EXPECT_ERROR(a23.pow(b4), "pow", "[2, 3]", "[4]");
  EXPECT_ERROR(a23 == b4, "eq", "[2, 3]", "[4]");
  EXPECT_ERROR(a23 < b4, "lt", "[2, 3]", "[4]");
  EXPECT_ERROR(kiln::where(a23 > 0, a23, b4), "where", "[2, 3]", "[4]");
  EXPECT_ERROR(a23.masked_fill(kiln::ones({3, 3}, kiln::kBool), 0), "masked_fill", "[2, 3]", "[3, 3]");
  EXPECT_ERROR(a23.masked_fill(kiln::ones({2, 2, 3}, kiln::kBool), 0), "masked_fill", "[2, 2, 3]");
  EXPECT_ERROR(kiln::ones({2, 1, 3}) + kiln::ones({4, 2}), "add", "[2, 1, 3]", "[4, 2]");
  EXPECT_ERROR(kiln::broadcast_shapes({2}, {3}), "broadcast_shapes", "[2]", "[3]");
  EXPECT_ERROR(a23.expand({4, 3}), "expand", "[4, 3]", "[2, 3]");
  EXPECT_ERROR(a23.expand({3}), "expand", "[2, 3]");
  EXPECT_ERROR(a23.expand_as(kiln::ones({2, 4})), "expand", "[2, 4]");
  Tensor x = kiln::ones({2, 3});
  EXPECT_ERROR(x.add_(kiln::ones({2, 2, 3})), "in-place", "[2, 3]", "[2, 2, 3]");
  EXPECT_ERROR(x.mul_(kiln::ones({4})), "mul", "[2, 3]", "[4]");
}

TEST(Errors, BadDims) {
  const Tensor a23 = kiln::ones({2, 3});
  const Tensor& x = a23;
  const std::vector<std::string> range = {"out of range", "[-2, 1]", "got 2"};
  auto dim_error = [&](const char* op, const std::function<void()>& stmt) {
    SCOPED_TRACE(op);
    std::vector<std::string> parts = range;
    parts.push_back(op);
    expect_error(stmt, parts);
  };
  dim_error("sum", [&] { x.sum(2); });
  dim_error("sum", [&] { x.sum({0, 2}); });
  dim_error("mean", [&] { x.mean(2); });
  dim_error("prod", [&] { x.prod(2); });
  dim_error("amax", [&] { x.amax(2); });
  dim_error("amin", [&] { x.amin({2}); });
  dim_error("max", [&] { x.max(2); });
  dim_error("min", [&] { x.min(2); });
  dim_error("argmax", [&] { x.argmax(2); });
  dim_error("argmin", [&] { x.argmin(2); });
  dim_error("var", [&] { x.var({2}, true); });
  dim_error("std", [&] { x.std({2}, true); });
  dim_error("norm", [&] { x.norm(2, {2}); });
  dim_error("logsumexp", [&] { x.logsumexp({2}); });
  dim_error("softmax", [&] { x.softmax(2); });
  dim_error("log_softmax", [&] { x.log_softmax(2); });
  dim_error("all", [&] { x.all(2); });
  dim_error("any", [&] { x.any(2); });
  dim_error("cat", [&] { kiln::cat({x, x}, 2); });
  dim_error("select", [&] { x.select(2, 0); });
  dim_error("narrow", [&] { x.narrow(2, 0, 1); });
  dim_error("slice", [&] { x.slice(2, 0, 1); });
  dim_error("transpose", [&] { x.transpose(0, 2); });
  dim_error("permute", [&] { x.permute({0, 2}); });
  dim_error("squeeze", [&] { x.squeeze(2); });
  dim_error("flatten", [&] { x.flatten(0, 2); });
  dim_error("unflatten", [&] { x.unflatten(2, {1}); });
  dim_error("index_select", [&] { x.index_select(2, kiln::tensor({0})); });
  dim_error("gather", [&] { x.gather(2, kiln::zeros({2, 3}, kiln::kLong)); });
  dim_error("size", [&] { x.size(2); });
  dim_error("stride", [&] { x.stride(2); });
  dim_error("split", [&] { x.split(1, 2); });
  dim_error("chunk", [&] { x.chunk(2, 2); });
  dim_error("unbind", [&] { x.unbind(2); });
  EXPECT_ERROR(x.unsqueeze(3), "unsqueeze", "[-3, 2]", "got 3");
  EXPECT_ERROR(kiln::stack({x, x}, 3), "stack", "[-3, 2]", "got 3");
  EXPECT_ERROR(x.sum({0, -2}), "sum", "dim 0 appears multiple times");
  EXPECT_ERROR(x.permute({0}), "permute", "[2, 3]", "[0]");
  EXPECT_ERROR(x.permute({1, 1}), "permute", "repeated dim", "[1, 1]");
  EXPECT_ERROR(x.flatten(1, 0), "flatten", "start_dim (1)", "end_dim (0)");
  EXPECT_ERROR(kiln::ones({2, 2, 2}).t(), "t", "3D", "[2, 2, 2]");
  EXPECT_ERROR(kiln::tensor(1.0).select(0, 0), "select", "0-dim");
  EXPECT_ERROR(kiln::tensor(1.0).narrow(0, 0, 1), "narrow", "0-dim");
}

// A 0-d tensor answers to dim 0 where PyTorch lets it (reductions, softmax, squeeze, gather) and
// throws where the op reads the dimension's size, as libtorch does.
TEST(Errors, ZeroDimTensorHasNoDimensionToRead) {
  const Tensor s = kiln::tensor(2.0);
  auto no_dims = [&](const char* op, auto&& call) {
    SCOPED_TRACE(op);
    EXPECT_ERROR(call(), op, "dimension specified as", "no dimensions", "[] float32");
  };
  no_dims("size", [&] { return s.size(0); });
  no_dims("size", [&] { return s.size(-1); });
  no_dims("stride", [&] { return s.stride(0); });
  no_dims("slice", [&] { return s.slice(0, 0, 1); });
  no_dims("split", [&] { return s.split(1, 0); });
  no_dims("chunk", [&] { return s.chunk(1, 0); });
  no_dims("unbind", [&] { return s.unbind(0); });
  no_dims("unflatten", [&] { return s.unflatten(0, {1}); });
  // What PyTorch allows on a 0-d tensor still works, and the tensor is unharmed.
  EXPECT_EQ(s.sum(0).item<double>(), 2.0);
  EXPECT_EQ(s.softmax(-1).item<double>(), 1.0);
  EXPECT_EQ(s.squeeze(0).dim(), 0);
  const Tensor g = s.gather(0, kiln::tensor(int64_t(0)));
  EXPECT_EQ(g.dim(), 0);
  EXPECT_EQ(g.item<double>(), 2.0);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ((s * 3).item<double>(), 6.0);
}

TEST(Errors, IndexOutOfRange) {
  const Tensor a23 = kiln::ones({2, 3});
  EXPECT_ERROR(a23.select(1, 5), "select", "index 5", "[2, 3]");
  EXPECT_ERROR(a23.select(0, -3), "select", "index -3", "[2, 3]");
  EXPECT_ERROR(a23[2], "select", "index 2", "[2, 3]");
  EXPECT_ERROR(a23.narrow(1, 2, 2), "narrow", "start (2)", "length (2)", "[2, 3] float32");
  EXPECT_ERROR(a23.narrow(0, -3, 1), "narrow", "[2, 3] float32");
  EXPECT_ERROR(a23.slice(1, 0, 3, 0), "slice", "step", "0");
  // An index given as data is checked at the call.
  EXPECT_ERROR(a23.index_select(1, kiln::tensor({0, 5})), "index_select", "index 5", "size 3", "[2, 3] float32");
  EXPECT_ERROR(a23.index_select(0, kiln::tensor({-3})), "index_select", "index -3");
  EXPECT_ERROR(a23.gather(1, kiln::tensor({{0, 3}})), "gather", "index 3", "size 3", "[2, 3] float32");
  EXPECT_ERROR(kiln::embedding(a23, kiln::tensor({2})), "index_select", "index 2", "size 2");
  // A computed index is known only when the flush computes it: the flush throws, naming the op.
  EXPECT_ERROR_AT_FLUSH(a23.index_select(1, kiln::tensor({1, 2}) * 2).sum().item<float>(), "index_select", "index 4",
                        "size 3");
  EXPECT_ERROR_AT_FLUSH(a23.gather(0, kiln::tensor({{0, 1, 2}}) + 1).sum().item<float>(), "gather", "index 2",
                        "size 2");
  // Shapes of the index.
  EXPECT_ERROR(a23.index_select(0, kiln::zeros({1, 1}, kiln::kLong)), "index_select", "1 dimension", "[1, 1]");
  EXPECT_ERROR(a23.gather(1, kiln::zeros({2}, kiln::kLong)), "gather", "same number of dimensions", "[2, 3]", "[2]");
  EXPECT_ERROR(a23.gather(1, kiln::zeros({3, 1}, kiln::kLong)), "gather", "[3, 1]", "[2, 3]");
}

TEST(Errors, UnsupportedDtypes) {
  const Tensor a23 = kiln::ones({2, 3});
  Tensor b = kiln::ones({2, 2}, kiln::kBool), i = kiln::ones({2, 2}, kiln::kLong);
  EXPECT_ERROR(b.matmul(b), "matmul", "bool");
  EXPECT_ERROR(b.mm(b), "mm", "bool");
  EXPECT_ERROR(a23.mm(kiln::ones({3, 2}, kiln::kDouble)), "mm", "float32", "float64");
  EXPECT_ERROR(i.requires_grad_(), "requires_grad_", "floating point", "int64");
  EXPECT_ERROR(kiln::ones({2}, kiln::dtype(kiln::kLong).requires_grad(true)), "requires_grad_", "int64");
  EXPECT_ERROR(kiln::tensor({1, 2}, kiln::requires_grad()), "requires_grad_", "int64");
  EXPECT_ERROR(i.mean(), "mean", "floating point", "int64");
  EXPECT_ERROR(i.mean(0), "mean", "int64");
  EXPECT_ERROR(i.var(), "var", "int64");
  EXPECT_ERROR(i.norm(), "norm", "int64");
  EXPECT_ERROR(b - b, "sub", "bool");
  EXPECT_ERROR(-b, "neg", "bool");
  EXPECT_ERROR(kiln::where(i, i, i), "where", "boolean", "int64");
  EXPECT_ERROR(i.masked_fill(i, 0), "masked_fill", "bool", "int64");
  EXPECT_ERROR(a23.index_select(0, kiln::tensor({0.0f})), "index_select", "int64", "float32");
  EXPECT_ERROR(a23.gather(0, kiln::zeros({1, 3})), "gather", "int64", "float32");
  EXPECT_ERROR(kiln::one_hot(kiln::tensor({1.0f})), "one_hot", "int64", "float32");
  EXPECT_ERROR(a23.data_ptr<int64_t>(), "data_ptr", "int64", "float32");
}

TEST(Errors, ShapesOfViewsAndReshapes) {
  Tensor x = kiln::ones({2, 3});
  EXPECT_ERROR(x.t().view({6}), "view", "not compatible with input tensor's size and stride", "[3, 2]", "Use .reshape");
  EXPECT_ERROR(x.narrow(1, 0, 2).view({4}), "view", "[2, 2]");
  EXPECT_ERROR(x.reshape({4}), "reshape", "'[4]' is invalid for input of size 6", "[2, 3] float32");
  EXPECT_ERROR(x.view({4, -1}), "view", "'[4, -1]' is invalid for input of size 6");
  EXPECT_ERROR(x.reshape({-1, -1}), "reshape", "only one dimension can be inferred");
  EXPECT_ERROR(x.reshape({-2, 3}), "reshape", "invalid shape dimension -2");
  EXPECT_ERROR(x.view_as(kiln::ones({5})), "view", "[5]");
  EXPECT_ERROR(x.unflatten(1, {2, 2}), "view", "[2, 2, 2]");
  EXPECT_ERROR(kiln::zeros({2, -1}), "full", "negative dimension -1");
  EXPECT_ERROR(kiln::ones({1, 1, 1, 1, 1, 1, 1, 1, 1}), "at most 8 dimensions");
  EXPECT_ERROR(kiln::tensor({{1.0, 2.0}, {3.0}}), "tensor", "sub-lists to have sizes: 2");
  EXPECT_ERROR((void)x.item<float>(), "item", "6 elements");
  EXPECT_ERROR(kiln::cat({}), "cat", "non-empty");
  EXPECT_ERROR(kiln::cat({x, kiln::ones({2, 2, 1})}), "cat", "same number of dimensions", "[2, 2, 1]");
  EXPECT_ERROR(kiln::cat({x, kiln::ones({3, 3})}, 1), "cat", "Expected size 2 but got size 3", "[3, 3]");
  EXPECT_ERROR(kiln::cat({kiln::tensor(1.0), kiln::tensor(2.0)}), "cat", "zero-dimensional");
  EXPECT_ERROR(kiln::stack({x, kiln::ones({3, 2})}), "stack", "[2, 3]", "[3, 2]");
  EXPECT_ERROR(x.split(0), "split", "positive");
  EXPECT_ERROR(kiln::arange(0, 5, 0), "arange", "nonzero");
  EXPECT_ERROR(kiln::arange(5, 0, 1), "arange", "start 5", "end 0");
  EXPECT_ERROR(kiln::linspace(0, 1, -1), "linspace", "-1");
  EXPECT_ERROR(kiln::eye(-1), "eye", "-1");
  EXPECT_ERROR(kiln::randint(5, 5, {2}), "randint", "from=5", "to=5");
  EXPECT_ERROR(kiln::randperm(-1), "randperm", "-1");
  EXPECT_ERROR(x.gelu("fast"), "gelu", "'fast'");
  // Two nullopts name no overload, as in libtorch (Scalar and Tensor bounds): one is typed.
  EXPECT_ERROR(x.clamp(std::optional<kiln::Scalar>(), std::nullopt), "clamp", "[2, 3] float32");
  EXPECT_ERROR(kiln::embedding(kiln::ones({4}), kiln::tensor({0})), "embedding", "[4] float32");
  EXPECT_ERROR(kiln::ones({0}).amax(), "amax", "non-zero size", "[0] float32");
  EXPECT_ERROR(kiln::ones({0}).argmax(), "argmax", "non-empty", "[0] float32");
  EXPECT_ERROR(kiln::from_blob(nullptr, {2}, {1, 1}), "from_blob", "[2]", "[1, 1]");
}

TEST(Errors, MoreThanEightDimensions) {
  Tensor x = kiln::ones({1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_ERROR(x.unsqueeze(0), "unsqueeze", "at most 8 dimensions", "[1, 1, 1, 1, 1, 1, 1, 2]");
  EXPECT_ERROR(x.expand({2, 1, 1, 1, 1, 1, 1, 1, 2}), "expand", "at most 8 dimensions", "[2, 1, 1, 1, 1, 1, 1, 1, 2]");
  EXPECT_ERROR(x.reshape({1, 1, 1, 1, 1, 1, 1, 1, 2}), "reshape", "at most 8 dimensions", "[1, 1, 1, 1, 1, 1, 1, 2]");
}

TEST(Errors, MatmulShapes) {
  const Tensor a23 = kiln::ones({2, 3});
  EXPECT_ERROR(a23.mm(a23), "mm", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  EXPECT_ERROR(a23.mm(kiln::ones({3})), "mm", "2-D", "[3] float32");
  EXPECT_ERROR(a23.matmul(a23), "matmul", "2x3 and 2x3");
  EXPECT_ERROR(kiln::ones({3}).matmul(kiln::ones({4})), "matmul", "[3]", "[4]");
  EXPECT_ERROR(kiln::ones({2, 2, 3}).matmul(kiln::ones({2, 2, 3})), "matmul", "[2, 2, 3]");
  EXPECT_ERROR(kiln::ones({2, 2, 3}).matmul(kiln::ones({4})), "matmul", "[2, 2, 3]", "[4]");
  EXPECT_ERROR(kiln::ones({2, 2, 3}).matmul(kiln::ones({3, 3, 1})), "matmul", "batch", "[2, 2, 3]", "[3, 3, 1]");
  EXPECT_ERROR(kiln::tensor(1.0).matmul(a23), "matmul", "0D");
  EXPECT_ERROR(kiln::ones({2, 2, 3}).bmm(kiln::ones({3, 3, 1})), "bmm", "[2, 2, 3]", "[3, 3, 1]");
  EXPECT_ERROR(a23.bmm(a23), "bmm", "3-D", "[2, 3] float32");
  EXPECT_ERROR(kiln::linear(a23, kiln::ones({4, 2})), "linear", "[2, 3] float32", "[4, 2] float32");
}

TEST(Errors, Autograd) {
  Tensor x = kiln::ones({2, 3}, kiln::requires_grad());
  EXPECT_ERROR((x * 2).backward(), "backward", "grad can be implicitly created only for scalar outputs", "[2, 3]");
  EXPECT_ERROR((x * 2).backward(kiln::ones({3})), "backward", "Mismatch in shape", "[3]", "[2, 3]");
  EXPECT_ERROR(kiln::ones({2}).sum().backward(), "backward", "does not require grad");
  EXPECT_ERROR(kiln::autograd::grad({(x * 2).sum()}, {kiln::ones({2})}), "grad", "does not require grad", "[2]");
  Tensor unused = kiln::ones({1}, kiln::requires_grad());
  EXPECT_ERROR(kiln::autograd::grad({(x * 2).sum()}, {unused}), "grad", "appears to not have been used");
  {
    Tensor y = (x * x).sum();
    y.backward();
    EXPECT_ERROR(y.backward(), "backward", "Trying to backward through the graph a second time", "retain_graph");
  }
  EXPECT_ERROR(x.add_(1), "in-place", "a leaf Variable that requires grad is being used in an in-place operation");
  EXPECT_ERROR(x.copy_(kiln::zeros({2, 3})), "a leaf Variable that requires grad");
  EXPECT_ERROR((x * 2).requires_grad_(false), "requires_grad_", "leaf variables");
  EXPECT_ERROR(kiln::ones({2}).register_hook([](Tensor g) { return g; }), "register_hook", "doesn't require");
  EXPECT_ERROR(kiln::ones({2}).retain_grad(), "retain_grad", "requires_grad=False");
  {
    Tensor h = x * 2;
    Tensor z = h.exp();
    z.add_(1);
    EXPECT_ERROR(z.sum().backward(), "backward", "modified by an inplace operation", "[CPUFloatType [2, 3]]",
                 "output 0 of ExpBackward0", "is at version 1; expected version 0 instead");
  }
  {
    Tensor h = x * 2;
    Tensor z = h * h;
    const std::string maker = "which is output 0 of " + h.grad_fn()->name() + ",";  // the node that made h
    h.sub_(1);
    EXPECT_ERROR(z.sum().backward(), "modified by an inplace operation", maker);
  }
  // A custom function whose backward returns the wrong number of gradients.
  struct Bad : kiln::autograd::Function<Bad> {
    static Tensor forward(kiln::autograd::AutogradContext*, Tensor a, Tensor b) { return a * b; }
    static kiln::tensor_list backward(kiln::autograd::AutogradContext*, kiln::tensor_list g) { return {g[0]}; }
  };
  EXPECT_ERROR(Bad::apply(x, x).sum().backward(), "Bad", "returned 1 gradients, expected 2");
}

TEST(Errors, AreKilnErrorsAndRuntimeErrors) {
  const Tensor a23 = kiln::ones({2, 3});
  EXPECT_THROW(a23 + kiln::ones({4}), kiln::Error);
  EXPECT_THROW(a23 + kiln::ones({4}), std::runtime_error);
  try {
    a23.sum(5);
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos);
  }
  // Nothing of the failed calls was left behind: a long run of errors, then normal work.
  for (int i = 0; i < 100; ++i) EXPECT_THROW(a23.mm(a23), kiln::Error);
  EXPECT_EQ(a23.t().mm(a23).sum().item<float>(), 18.0f);
}

}  // namespace

// libtorch's &, | and ~ are bitwise: logical on bool tensors, bitwise on integers (~ of int64
// {1, 2, 3} once answered logically, {false, false, false}), refused on floats.
TEST(Errors, BitwiseOpsOnFloatTensors) {
  const Tensor li = kiln::tensor({1, 2, 3}), f = kiln::ones({3}), b = kiln::tensor({true, false, true});
  EXPECT_EQ((~li).to_vector<int64_t>(), std::vector<int64_t>({-2, -3, -4}));
  EXPECT_ERROR(~f, "bitwise_not", "[3] float32");
  EXPECT_EQ((li & b).to_vector<int64_t>(), std::vector<int64_t>({1, 0, 1}));
  EXPECT_ERROR(b | f, "bitwise_or", "[3] float32");
  EXPECT_EQ((~b).to_vector<bool>(), std::vector<bool>({false, true, false}));
  EXPECT_EQ((b & ~b).to_vector<bool>(), std::vector<bool>({false, false, false}));
  EXPECT_EQ((b | ~b).to_vector<bool>(), std::vector<bool>({true, true, true}));
}

// As libtorch: an in-place op whose result cannot be cast to self's dtype throws (it truncated).
TEST(Errors, InPlaceResultThatSelfsDtypeCannotHold) {
  Tensor li = kiln::tensor({1, 2});
  EXPECT_ERROR(li.div_(2), "div_", "float32", "int64", "[2] int64");
  EXPECT_ERROR(li += 1.5, "add_", "float32", "int64");
  EXPECT_ERROR(li *= kiln::ones({2}), "mul_", "float32", "int64");
  EXPECT_ERROR(li.clamp_(0.5, 2.5), "clamp_", "float32", "int64");
  EXPECT_ERROR(li.sqrt_(), "sqrt_", "int64");
  Tensor b = kiln::tensor({true, false});
  EXPECT_ERROR(b += 1, "add_", "int64", "bool");
  // Nothing was written, and what libtorch allows still works.
  EXPECT_EQ(li.to_vector<int64_t>(), std::vector<int64_t>({1, 2}));
  li.add_(1);
  EXPECT_EQ(li.to_vector<int64_t>(), std::vector<int64_t>({2, 3}));
  li.fill_(1.5);  // fill_ casts its value, as libtorch's
  EXPECT_EQ(li.to_vector<int64_t>(), std::vector<int64_t>({1, 1}));
  Tensor f = kiln::ones({2});
  f.add_(kiln::tensor({1, 2}));
  EXPECT_EQ(f.to_vector<float>(), std::vector<float>({2, 3}));
}

TEST(Errors, SqueezeOfAZeroDimTensorChecksTheDim) {
  const Tensor s = kiln::tensor(2.0);
  EXPECT_ERROR(s.squeeze(1), "squeeze", "[-1, 0]", "got 1");
  EXPECT_EQ(s.squeeze(-1).dim(), 0);
}

TEST(Errors, BoolSubtractionIntegerNegativePowerAndFloatAlpha) {
  const Tensor b = kiln::tensor({true, false}), li = kiln::tensor({1, 2});
  EXPECT_ERROR(b - 1, "sub", "bool tensor", "[2] bool");
  EXPECT_ERROR(1 - b, "sub", "bool tensor", "[2] bool");
  EXPECT_ERROR(b - b, "sub", "bool tensor");
  EXPECT_ERROR(li.pow(-1), "pow", "negative integer powers", "[2] int64");
  EXPECT_ERROR(li.add(li, 0.5), "add", "alpha", "[2] int64");
  EXPECT_ERROR(li.sub(li, 0.5), "sub", "alpha", "[2] int64");
  // Allowed: a float base to a negative integer, an integer alpha, a float alpha on floats.
  EXPECT_EQ(kiln::tensor({2.0f}).pow(-1).item<float>(), 0.5f);
  EXPECT_EQ(li.add(li, 2).to_vector<int64_t>(), std::vector<int64_t>({3, 6}));
  EXPECT_EQ(kiln::ones({1}).add(kiln::ones({1}), 0.5).item<float>(), 1.5f);
  EXPECT_EQ((li - 1).to_vector<int64_t>(), std::vector<int64_t>({0, 1}));
}

TEST(Errors, MaskedFillValueOneHotRangeAndWritesToExpandedMemory) {
  const Tensor f = kiln::ones({3}), mask = kiln::tensor({true, false, true});
  EXPECT_ERROR(f.masked_fill(mask, kiln::ones({3})), "masked_fill", "0-dimensional", "[3] float32");
  EXPECT_EQ(f.masked_fill(mask, kiln::tensor(5.0f)).to_vector<float>(), std::vector<float>({5, 1, 5}));
  EXPECT_ERROR(f.masked_fill(kiln::ones({2, 3}, kiln::kBool), kiln::tensor(5.0f)), "masked_fill", "does not broadcast",
               "[3]");
  EXPECT_ERROR(kiln::one_hot(kiln::tensor({0, 5}), 3), "one_hot", "index 5", "size 3");
  EXPECT_ERROR(kiln::one_hot(kiln::tensor({-1}), 3), "one_hot", "index -1");
  EXPECT_EQ(kiln::one_hot(kiln::tensor({2, 0}), 3).to_vector<int64_t>(), std::vector<int64_t>({0, 0, 1, 1, 0, 0}));
  Tensor base = kiln::ones({1, 3});
  Tensor wide = base.expand({2, 3});
  EXPECT_ERROR(wide.add_(1), "in-place", "single memory location", "[2, 3] float32");
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>({1, 1, 1}));
  wide.select(0, 0).add_(1);  // one row of it is an ordinary view
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>({2, 2, 2}));
}

// libtorch refuses such values too ("value cannot be converted to type int64_t without overflow").
TEST(Errors, Int64ValuesOutOfRange) {
  Tensor longs = kiln::zeros({2}, kiln::kLong);
  EXPECT_ERROR(kiln::full({1}, 1e30, kiln::kLong), "full", "1e+30", "cannot be converted to type int64", "[1]");
  EXPECT_ERROR(kiln::full({2}, std::nan(""), kiln::kLong), "full", "nan", "[2]");
  EXPECT_ERROR(longs.fill_(-1e19), "fill_", "-1e+19", "[2] int64");
  EXPECT_ERROR(longs.masked_fill(kiln::ones({2}, kiln::kBool), 1e19), "masked_fill", "1e+19", "[2] int64");
  EXPECT_ERROR(kiln::arange(0, 5, 0.5, kiln::kLong), "arange", "step must be nonzero", "0.5");
  EXPECT_ERROR(kiln::arange(0, 1e30, 1, kiln::kLong), "arange", "1e+30", "int64");
}

TEST(Errors, FromBlobLayouts) {
  float buf[4] = {};
  EXPECT_ERROR(kiln::from_blob(buf, {2, 2}, {-1, 1}), "from_blob", "negative stride", "[2, 2]", "[-1, 1]");
  EXPECT_ERROR(kiln::from_blob(nullptr, {2, 2}), "from_blob", "null", "[2, 2]");
  EXPECT_ERROR(kiln::from_blob(buf, {-2, 2}), "from_blob", "negative dimension -2", "[-2, 2]");
  EXPECT_EQ(kiln::from_blob(nullptr, {0, 2}).numel(), 0);
}

TEST(Errors, CloneFormats) {
  EXPECT_ERROR(kiln::ones({2, 3}).clone(kiln::MemoryFormat::ChannelsLast), "clone", "rank 4", "[2, 3] float32");
  EXPECT_ERROR(kiln::ones({2, 3, 4, 5}).clone(kiln::MemoryFormat::ChannelsLast3d), "clone", "rank 5",
               "[2, 3, 4, 5] float32");
  EXPECT_ERROR(kiln::ones({2, 3}).contiguous(kiln::MemoryFormat::Preserve), "contiguous", "preserve", "[2, 3] float32");
}
