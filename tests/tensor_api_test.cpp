// libtorch's everyday tensor API (issue 30): torch::tensor from nested lists, the default dtype,
// tolerance comparisons, `to`, resize_, indexing, and the rearranging ops. The expected values,
// dtypes and error texts are what libtorch 1.13 gives for the same calls.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <limits>

#include "expect_error.h"
#include "gradcheck.h"

namespace {

using namespace torch::indexing;
using gradcheck::check;

std::vector<int64_t> longs(const torch::Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<double> doubles(const torch::Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> sizes(const torch::Tensor& t) { return t.sizes().vec(); }

// Restores the default dtype when a test that changes it ends, even by a failed assertion.
struct DefaultDtypeGuard {
  ~DefaultDtypeGuard() { torch::set_default_dtype(torch::scalarTypeToTypeMeta(torch::kFloat)); }
};

}  // namespace

// --- torch::tensor and the default dtype ---

TEST(TensorApi, TensorFromNestedListsInfersLibtorchsDtypes) {
  torch::Tensor ints = torch::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(ints.dtype(), torch::kLong);
  EXPECT_EQ(sizes(ints), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(longs(ints), (std::vector<int64_t>{1, 2, 3, 4}));
  torch::Tensor bools = torch::tensor({{{true}, {false}}});
  EXPECT_EQ(bools.dtype(), torch::kBool);
  EXPECT_EQ(sizes(bools), (std::vector<int64_t>{1, 2, 1}));
  torch::Tensor doubles64 = torch::tensor({{1.5, 2.}, {3., 4.}}, torch::kFloat64);
  EXPECT_EQ(doubles64.dtype(), torch::kFloat64);
  EXPECT_EQ(doubles(doubles64), (std::vector<double>{1.5, 2, 3, 4}));
  EXPECT_EQ(torch::tensor({{1.5, 2.}}).dtype(), torch::kFloat);  // the default dtype, not double
  EXPECT_EQ(torch::tensor({{1.5f}}).dtype(), torch::kFloat);
  torch::Tensor deep = torch::tensor({{{{1, 2, 3}}}, {{{4, 5, 6}}}}, torch::TensorOptions().dtype(torch::kFloat64));
  EXPECT_EQ(sizes(deep), (std::vector<int64_t>{2, 1, 1, 3}));
  EXPECT_DOUBLE_EQ(deep.sum().item<double>(), 21);
  torch::Tensor empty = torch::tensor({});
  EXPECT_EQ(sizes(empty), (std::vector<int64_t>{0}));
  EXPECT_EQ(empty.dtype(), torch::kFloat);
  EXPECT_EQ(torch::tensor(3).dim(), 0);
  EXPECT_EQ(torch::tensor(3).dtype(), torch::kLong);
  torch::Tensor leaf = torch::tensor({{1., 2.}}, torch::requires_grad());
  EXPECT_TRUE(leaf.requires_grad());
  EXPECT_TRUE(leaf.is_leaf());
  EXPECT_EQ(torch::tensor(std::vector<float>{1, 2}, torch::kFloat64).dtype(), torch::kFloat64);
  EXPECT_EQ(torch::tensor(std::vector<int>{1, 2}).dtype(), torch::kLong);
  // Large integers stay exact.
  EXPECT_EQ(torch::tensor({{int64_t(1) << 62}}).item<int64_t>(), int64_t(1) << 62);
}

TEST(TensorApi, RaggedOrMixedListsThrowAsLibtorch) {
  EXPECT_THROW_WITH(torch::tensor({{1, 2}, {3}}),
                    "Expected all sub-lists to have sizes: 2 (e.g. {1, 2}), but got sub-list {3} with sizes: 1");
  EXPECT_THROW_WITH(torch::tensor({{1, 2}, {3.5, 4}}),
                    "Expected all elements of the tensor to have the same scalar "
                    "type: Double, but got element of scalar type: Int");
  EXPECT_THROW_WITH(torch::tensor({1, 2.5}), "same scalar type: Int, but got element of scalar type: Double");
}

TEST(TensorApi, DefaultDtypeGovernsFloatingFactories) {
  DefaultDtypeGuard restore;
  EXPECT_EQ(torch::get_default_dtype(), torch::kFloat);
  EXPECT_EQ(torch::typeMetaToScalarType(torch::get_default_dtype()), torch::kFloat);
  torch::set_default_dtype(torch::scalarTypeToTypeMeta(torch::kDouble));
  EXPECT_EQ(torch::tensor({1.5}).dtype(), torch::kDouble);
  EXPECT_EQ(torch::zeros({1}).dtype(), torch::kDouble);
  EXPECT_EQ(torch::arange(0.5, 2).dtype(), torch::kDouble);
  EXPECT_EQ(torch::rand({2}).dtype(), torch::kDouble);
  EXPECT_EQ(torch::full({1}, 0.5).dtype(), torch::kDouble);
  EXPECT_EQ(torch::tensor({1}).dtype(), torch::kLong);  // integers stay int64
  EXPECT_THROW_WITH(torch::set_default_dtype(torch::scalarTypeToTypeMeta(torch::kLong)),
                    "only floating-point types are supported as the default type");
}

TEST(TensorApi, MetadataAsLibtorchReportsIt) {
  torch::Tensor t = torch::arange(6).view({2, 3});
  EXPECT_EQ(t.nbytes(), 48u);
  EXPECT_EQ(t.element_size(), 8);
  EXPECT_EQ(t.itemsize(), 8);
  EXPECT_EQ(t.layout(), torch::kStrided);
  EXPECT_EQ(torch::TensorOptions().layout(torch::kStrided).layout(), torch::kStrided);
  EXPECT_TRUE(t.device().is_cpu());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.t().is_contiguous());
  EXPECT_EQ(torch::ones({3}, torch::kFloat).nbytes(), 12u);
}

// --- comparisons and conversions ---

TEST(TensorApi, IscloseAndAllcloseAsLibtorch) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  torch::Tensor a = torch::tensor({1.0, inf, nan, 2.0}), b = torch::tensor({1.0 + 1e-6, inf, nan, 5.0});
  EXPECT_EQ(a.isclose(b).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(a.isclose(b, 1e-5, 1e-8, true).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(torch::tensor({1, 2}).isclose(torch::tensor({1, 3})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(torch::tensor({inf, 1.0}).allclose(torch::tensor({inf, 1.0})));  // equal infinities
  EXPECT_FALSE(torch::tensor({5.0}).allclose(torch::tensor({inf})));
  EXPECT_TRUE(torch::allclose(torch::tensor({nan}), torch::tensor({nan}), 1e-5, 1e-8, /*equal_nan=*/true));
  EXPECT_TRUE(torch::tensor({1, 2}).equal(torch::tensor({1.0, 2.0})));
  EXPECT_THROW_WITH(a.isclose(b.to(torch::kDouble)), "did not match");
  EXPECT_THROW_WITH(a.isclose(b, -1), "rtol must be greater than or equal to zero, but got -1");
}

TEST(TensorApi, ToEveryOverload) {
  torch::Tensor x = torch::arange(6).view({2, 3}).t();
  EXPECT_EQ(x.to(torch::kFloat).dtype(), torch::kFloat);
  EXPECT_EQ(x.to(torch::Device(torch::kCPU)).dtype(), torch::kLong);
  EXPECT_EQ(x.to(torch::kCPU, torch::kDouble).dtype(), torch::kDouble);
  EXPECT_EQ(x.to(torch::TensorOptions().dtype(torch::kFloat64)).dtype(), torch::kFloat64);
  EXPECT_EQ(x.to(torch::ones({1}, torch::kFloat64)).dtype(), torch::kFloat64);
  EXPECT_TRUE(x.to().is_same(x));
  EXPECT_TRUE(x.to(torch::kLong).is_same(x));
  torch::Tensor copied = x.to(torch::kLong, /*non_blocking=*/false, /*copy=*/true);
  EXPECT_FALSE(copied.is_same(x));
  EXPECT_EQ(longs(copied), longs(x));
  torch::Tensor dense = x.to(torch::kLong, false, false, torch::MemoryFormat::Contiguous);
  EXPECT_TRUE(dense.is_contiguous());
  EXPECT_EQ(longs(dense), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(x.to(torch::Device("cuda:0")), torch::Error);
}

TEST(TensorApi, ResizeKeepsTheLeadingElements) {
  torch::Tensor t = torch::arange(6.).view({2, 3});
  t.resize_({2, 2});
  EXPECT_EQ(sizes(t), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(doubles(t), (std::vector<double>{0, 1, 2, 3}));
  torch::Tensor base = torch::arange(6.);
  torch::Tensor view = base.view({2, 3});
  view.resize_({4});
  EXPECT_EQ(doubles(view), (std::vector<double>{0, 1, 2, 3}));
  view.resize_({3, 3});
  EXPECT_EQ(doubles(view.flatten().narrow(0, 0, 6)), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  view.fill_(7);
  EXPECT_DOUBLE_EQ(view.sum().item<double>(), 63);
  EXPECT_THROW_WITH(torch::ones({2}, torch::requires_grad()).resize_({3}), "cannot resize variables that require grad");
}

// --- clamp and where ---

TEST(TensorApi, ClampWithTensorBoundsGradientsAsLibtorch) {
  torch::Tensor x = torch::tensor({-1.0, 0.5, 2.0, 1.0}, torch::requires_grad());
  torch::Tensor lo = torch::tensor({0.0, 0.0, 0.0, 1.0}, torch::requires_grad());
  torch::Tensor hi = torch::tensor({1.0, 1.0, 1.0, 1.0}, torch::requires_grad());
  torch::Tensor r = x.clamp(lo, hi);
  r.sum().backward();
  EXPECT_EQ(doubles(r), (std::vector<double>{0, 0.5, 1, 1}));
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(doubles(lo.grad()), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(doubles(hi.grad()), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_TRUE(std::isnan(torch::clamp(torch::tensor({1.0}), torch::tensor({std::nan("")})).item<double>()));
  EXPECT_EQ(doubles(torch::clamp_max(torch::tensor({1.0, 5.0}), torch::tensor({2.0}))), (std::vector<double>{1, 2}));
  EXPECT_THROW_WITH(x.clamp(std::optional<torch::Tensor>(), std::optional<torch::Tensor>()), "clamp: at least one");
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].clamp(in[1], in[2]); },
                    {gradcheck::randn({3, 4}), gradcheck::leaf(torch::full({3, 1}, -0.5, torch::kFloat64)),
                     gradcheck::leaf(torch::full({4}, 0.5, torch::kFloat64))}));
}

TEST(TensorApi, WhereWithScalarsTakesLibtorchsDtypes) {
  torch::Tensor c = torch::tensor({true, false, true});
  EXPECT_EQ(torch::where(c, 1.0, 0.0).dtype(), torch::kFloat);
  EXPECT_EQ(torch::where(c, 1, 0).dtype(), torch::kLong);
  EXPECT_EQ(torch::where(c, 1, 0.5).dtype(), torch::kFloat);
  EXPECT_EQ(torch::where(c, true, false).dtype(), torch::kBool);
  EXPECT_EQ(doubles(torch::where(c, 1, 0.5)), (std::vector<double>{1, 0.5, 1}));
  EXPECT_EQ(longs(torch::arange(3).where(c, -1)), (std::vector<int64_t>{0, -1, 2}));
}
