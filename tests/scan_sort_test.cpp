// Scans and orderings along a dim (frontend/scan_sort.h): values, dtypes, NaN and ties against
// libtorch 1.13's answers (printed by a libtorch program on the same inputs), float64 gradients
// against finite differences, errors naming the op and the shapes, and lazy fused programs
// around the library kernels against eager interpreted ones.
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

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor dt(std::initializer_list<double> values) { return torch::tensor(std::vector<double>(values), kiln::kDouble); }
Tensor longs(std::initializer_list<int64_t> values) { return torch::tensor(std::vector<int64_t>(values)); }

// Same values, NaN matching NaN.
void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 0) {
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": expected NaN, got " << got[i];
    else if (tol == 0)
      EXPECT_EQ(got[i], expected[i]) << "element " << i;
    else
      EXPECT_NEAR(got[i], expected[i], tol * std::max(1.0, std::fabs(expected[i]))) << "element " << i;
  }
}
void expect_longs(const Tensor& t, const std::vector<int64_t>& expected) {
  EXPECT_EQ(t.dtype(), kiln::kLong);
  EXPECT_EQ(t.to_vector<int64_t>(), expected);
}

// --- Scans ---

TEST(Scans, CumsumAndCumprodAlongEachDim) {
  const Tensor m = torch::tensor({{3., 1., 2.}, {1., 1., 0.}});
  expect_values(m.cumsum(1), {3, 4, 6, 1, 2, 2});
  expect_values(torch::cumsum(m, 0), {3, 1, 2, 4, 2, 2});
  expect_values(m.cumprod(0), {3, 1, 2, 3, 1, 0});
  expect_values(m.cumprod(-1), {3, 3, 6, 1, 1, 0});
  expect_values(m.t().cumsum(0), {3, 1, 4, 2, 6, 2});  // a transposed view, read as it is
  EXPECT_EQ(m.cumsum(1).sizes(), m.sizes());
  EXPECT_EQ(torch::tensor(2.5).cumsum(0).dim(), 0);  // a 0-d tensor is one element along dim 0
  EXPECT_EQ(torch::tensor(2.5).cumsum(-1).item<double>(), 2.5);
  EXPECT_EQ(torch::empty({2, 0}).cumsum(1).sizes(), (std::vector<int64_t>{2, 0}));
}

TEST(Scans, IntegerAndBoolInputsAccumulateInInt64) {
  const Tensor sum = longs({1, 2, 3}).cumsum(0);
  expect_longs(sum, {1, 3, 6});
  expect_longs(torch::tensor({true, false, true}).cumsum(0), {1, 1, 2});
  expect_longs(torch::tensor({true, true}).cumprod(0), {1, 1});
  expect_longs(longs({1, 2, 3}).cumprod(0), {1, 2, 6});
  const Tensor as_float = longs({1, 2, 3}).cumsum(0, kiln::kFloat);
  EXPECT_EQ(as_float.dtype(), kiln::kFloat);
  expect_values(as_float, {1, 3, 6});
  EXPECT_EQ(torch::ones({2}).cumsum(0, kiln::kDouble).dtype(), kiln::kDouble);
  // int64 is exact above 2^53 and wraps on overflow, as libtorch's.
  expect_longs(longs({(int64_t(1) << 53), 1}).cumsum(0), {int64_t(1) << 53, (int64_t(1) << 53) + 1});
  expect_longs(longs({std::numeric_limits<int64_t>::max(), 1}).cumsum(0),
               {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
}

TEST(Scans, Float32AccumulatesInFloat64AsLibtorch) {
  // libtorch 1.13: full({10}, 0.1f).cumsum(0) and full({5}, 1.1f).cumprod(0).
  expect_values(torch::full({10}, 0.1, kiln::kFloat).cumsum(0),
                {0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.40000000596046448, 0.5,
                 0.60000002384185791, 0.69999998807907104, 0.80000001192092896, 0.90000003576278687, 1});
  expect_values(torch::full({5}, 1.1, kiln::kFloat).cumprod(0),
                {1.1000000238418579, 1.2100000381469727, 1.3310000896453857, 1.4641001224517822, 1.6105102300643921});
}

// The library routines read four dtypes; the frontend widens the others exactly, so results and
// positions are those of the wide input, in the dtypes libtorch gives.
TEST(Scans, NarrowDtypesScanAndSortAsTheirWideValues) {
  const Tensor ints = torch::tensor({3, -1, 2, 2}).to(kiln::kInt);
  const Tensor sum = ints.cumsum(0);
  EXPECT_EQ(sum.dtype(), kiln::kLong);
  expect_longs(sum, {3, 2, 4, 6});
  auto [sorted, positions] = ints.sort(0);
  EXPECT_EQ(sorted.dtype(), kiln::kInt);
  expect_longs(sorted.to(kiln::kLong), {-1, 2, 2, 3});
  expect_longs(positions, {1, 2, 3, 0});
  const Tensor half = torch::tensor({0.5, 0.25, 1.5}).to(kiln::kHalf);
  const Tensor half_sum = half.cumsum(0);
  EXPECT_EQ(half_sum.dtype(), kiln::kHalf);
  expect_values(half_sum.to(kiln::kDouble), {0.5, 0.75, 2.25});
  auto [top, top_at] = half.to(kiln::kBFloat16).topk(2);
  EXPECT_EQ(top.dtype(), kiln::kBFloat16);
  expect_values(top.to(kiln::kDouble), {1.5, 0.5});
  expect_longs(top_at, {2, 0});
  expect_longs(torch::searchsorted(torch::tensor({1, 5, 9}).to(kiln::kByte), torch::tensor({5}).to(kiln::kByte)), {1});
}

TEST(Scans, InPlaceFormsKeepTheDtype) {
  Tensor x = torch::tensor({1., 2., 3.});
  const int64_t version = x._version();
  x.cumsum_(0);
  expect_values(x, {1, 3, 6});
  EXPECT_GT(x._version(), version);
  x.cumprod_(0, kiln::kFloat);
  expect_values(x, {1, 3, 18});
  Tensor i = longs({2, 3});
  i.cumprod_(0);
  expect_longs(i, {2, 6});
  EXPECT_THROW_WITH(torch::tensor({1., 2.}).cumsum_(0, kiln::kDouble), "cumsum_: Bad in-place call");
  EXPECT_THROW_WITH(longs({1, 2}).cumprod_(0, kiln::kFloat), "[2] int64");
}

TEST(Scans, CummaxAndCumminWithNaNAndTies) {
  // libtorch: a NaN takes over (and the next NaN moves the index), ties move it to the later one.
  const Tensor x = dt({3, 1, kNaN, 1, 2, kNaN, 3});
  auto [vmax, imax] = x.cummax(0);
  expect_values(vmax, {3, 3, kNaN, kNaN, kNaN, kNaN, kNaN});
  expect_longs(imax, {0, 0, 2, 2, 2, 5, 5});
  auto [vmin, imin] = torch::cummin(x, 0);
  expect_values(vmin, {3, 1, kNaN, kNaN, kNaN, kNaN, kNaN});
  expect_longs(imin, {0, 1, 2, 2, 2, 5, 5});
  const Tensor ties = dt({3, 1, 2, 1, 3, 0.5, 3});
  expect_longs(std::get<1>(ties.cummax(0)), {0, 0, 0, 0, 4, 4, 6});
  expect_longs(std::get<1>(ties.cummin(0)), {0, 1, 1, 3, 3, 5, 5});
  auto [lv, li] = longs({2, 5, 5, 1}).cummax(0);
  expect_longs(lv, {2, 5, 5, 5});
  expect_longs(li, {0, 1, 2, 2});
  EXPECT_EQ(std::get<0>(torch::empty({0}).cummax(0)).numel(), 0);
}

TEST(Scans, LogcumsumexpWithInfinitiesAndNaN) {
  expect_values(dt({-kInf, -kInf, 1, kInf, kNaN, 2}).logcumsumexp(0), {-kInf, -kInf, 1, kInf, kNaN, kNaN});
  expect_values(dt({1, 2, 3}).logcumsumexp(0),
                {1, std::log(std::exp(1) + std::exp(2)), std::log(std::exp(1) + std::exp(2) + std::exp(3))}, 1e-15);
  const Tensor m = torch::tensor({{3., 1., 2.}, {1., 1., 0.}});
  expect_values(m.logcumsumexp(1),
                {3, 3.1269280910491943, 3.4076058864593506, 1, 1.6931471824645996, 1.8619948625564575});
  expect_values(torch::tensor({0.5f, -1.f, 3.f, 2.f}).logcumsumexp(0),
                {0.5, 0.70141327381134033, 3.0956742763519287, 3.3840916156768799});
}

TEST(Scans, GradientsMatchFiniteDifferences) {
  const gradcheck::Options o;
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return in[0].cumsum(1); }, {gradcheck::randn({3, 4})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return in[0].cumsum(0); }, {gradcheck::randn({3, 4})}, o));
  EXPECT_TRUE(
      gradcheck::check([](const TensorList& in) { return in[0].cumprod(1); }, {gradcheck::away_from_zero({3, 5})}, o));
  EXPECT_TRUE(
      gradcheck::check([](const TensorList& in) { return in[0].logcumsumexp(-1); }, {gradcheck::randn({2, 5})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return std::get<0>(in[0].cummax(1)); },
                               {gradcheck::randn({3, 5})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return std::get<0>(in[0].cummin(0)); },
                               {gradcheck::randn({4, 3})}, o));
}

TEST(Scans, CumprodGradientWithZerosIsLibtorchs) {
  // libtorch 1.13's cumprod backward on these inputs and gradients.
  Tensor x = dt({2, 0, 3, 0, 5}).requires_grad_();
  x.cumprod(0).backward(dt({1, 2, 3, 4, 5}));
  expect_values(x.grad(), {1, 22, 0, 0, 0});
  Tensor y = dt({2, 0, 3, 4}).requires_grad_();
  y.cumprod(0).backward(dt({1, 2, 3, 4}));
  expect_values(y.grad(), {1, 118, 0, 0});
  // One zero and two zeros in a row, against finite differences (the row's product is smooth).
  gradcheck::Options first_order;
  first_order.gradgrad = false;
  for (const Tensor& at : {dt({1.5, 0, -2, 0.5}), dt({0, 1.5, -2, 0.5}), dt({1.5, -2, 0.5, 0})}) {
    EXPECT_TRUE(
        gradcheck::check([](const TensorList& in) { return in[0].cumprod(0); }, {gradcheck::leaf(at)}, first_order));
  }
}

TEST(Scans, LogcumsumexpGradientIsLibtorchs) {
  Tensor x = dt({1, 2, 3, 4}).requires_grad_();
  x.logcumsumexp(0).backward(dt({1, -2, 0, 0.5}));
  // libtorch 1.13 on the same input and gradient.
  expect_values(x.grad(), {0.47814645890005236, -1.4185449978889932, 0.11844140904495501, 0.32195712994398601}, 1e-12);
}

TEST(Scans, GradFnNamesAreLibtorchs) {
  Tensor x = torch::rand({4}, torch::requires_grad());
  EXPECT_EQ(x.cumsum(0).grad_fn()->name(), "CumsumBackward0");
  EXPECT_EQ(x.cumprod(0).grad_fn()->name(), "CumprodBackward0");
  EXPECT_EQ(x.logcumsumexp(0).grad_fn()->name(), "LogcumsumexpBackward0");
  EXPECT_EQ(std::get<0>(x.cummax(0)).grad_fn()->name(), "CummaxBackward0");
  EXPECT_EQ(std::get<0>(x.cummin(0)).grad_fn()->name(), "CumminBackward0");
  EXPECT_FALSE(std::get<1>(x.cummax(0)).requires_grad());
}

TEST(Scans, BadInputsThrowNamingTheOpAndShape) {
  const Tensor m = torch::rand({2, 3});
  EXPECT_THROW_WITH(m.cumsum(2), "cumsum: dimension out of range");
  EXPECT_THROW_WITH(m.cumprod(-3), "cumprod: dimension out of range");
  EXPECT_THROW_WITH(m.cummax(5), "cummax");
  EXPECT_THROW_WITH(m.cummin(2), "cummin");
  EXPECT_THROW_WITH(longs({1, 2}).logcumsumexp(0), "logcumsumexp: expected a floating point input, got [2] int64");
}

// --- Sorting ---

TEST(Sorting, SortIsStableWithNaNLargest) {
  const Tensor x = dt({3, 1, kNaN, 1, 2, kNaN, 3});
  auto [v, i] = x.sort();
  expect_values(v, {1, 1, 2, 3, 3, kNaN, kNaN});
  expect_longs(i, {1, 3, 4, 0, 6, 2, 5});
  auto [vd, id] = torch::sort(x, 0, true);
  expect_values(vd, {kNaN, kNaN, 3, 3, 2, 1, 1});
  expect_longs(id, {2, 5, 0, 6, 4, 1, 3});
  auto [vs, is] = x.sort(/*stable=*/true, 0, true);
  expect_longs(is, {2, 5, 0, 6, 4, 1, 3});
  expect_longs(x.argsort(), {1, 3, 4, 0, 6, 2, 5});
  expect_longs(torch::argsort(x, /*stable=*/true, 0, true), {2, 5, 0, 6, 4, 1, 3});
}

TEST(Sorting, SortAlongEachDimOfAMatrix) {
  const Tensor m = torch::tensor({{3., 1., 2.}, {1., 1., 0.}});
  auto [v0, i0] = m.sort(0, true);
  expect_values(v0, {3, 1, 2, 1, 1, 0});
  expect_longs(i0, {0, 0, 0, 1, 1, 1});
  auto [v1, i1] = m.sort(1);
  expect_values(v1, {1, 2, 3, 0, 1, 1});
  expect_longs(i1, {1, 2, 0, 2, 0, 1});
  expect_values(m.msort(), {1, 1, 0, 3, 1, 2});
  expect_values(torch::msort(m.t()), {1, 0, 2, 1, 3, 1});  // a transposed view
  auto [b, bi] = torch::tensor({true, false, true, false}).sort();
  EXPECT_EQ(b.dtype(), kiln::kBool);
  expect_longs(bi, {1, 3, 0, 2});
  auto [s, si] = torch::tensor(3.0).sort();  // 0-d: itself, at 0
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(si.item<int64_t>(), 0);
}

TEST(Sorting, TopkPicksAsLibtorch) {
  const Tensor x = dt({3, 1, kNaN, 1, 2, kNaN, 3});
  auto [v, i] = x.topk(3);
  expect_values(v, {kNaN, kNaN, 3});
  expect_longs(i, {5, 2, 0});
  auto [vs, is] = torch::topk(x, 3, 0, /*largest=*/false);
  expect_values(vs, {1, 1, 2});
  expect_longs(is, {1, 3, 4});
  // libtorch's positions among ties, sorted and unsorted, by selection and by partial sort.
  const Tensor y = dt({5, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3});
  expect_longs(std::get<1>(y.topk(3, 0, true, false)), {12, 5, 14});
  expect_longs(std::get<1>(y.topk(5, 0, false, true)), {1, 3, 6, 9, 15});
  expect_longs(std::get<1>(y.topk(5, 0, false, false)), {6, 1, 3, 9, 15});
  std::vector<double> big;
  for (int i = 0; i < 200; ++i) big.push_back((i * 7) % 13);
  const Tensor b = torch::tensor(big, kiln::kDouble);
  expect_longs(std::get<1>(b.topk(2)), {24, 11});
  expect_longs(std::get<1>(b.topk(2, 0, false)), {13, 0});
  auto [e, ei] = torch::rand({2, 3}).topk(0, 1);
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{2, 0}));
}

TEST(Sorting, KthvalueMedianAndModeAsLibtorch) {
  const Tensor y = dt({5, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3});
  auto [k4, k4i] = y.kthvalue(4);
  EXPECT_EQ(k4.item<double>(), 3);
  EXPECT_EQ(k4i.item<int64_t>(), 9);
  auto [k9, k9i] = torch::kthvalue(y, 9);
  EXPECT_EQ(k9.item<double>(), 5);
  EXPECT_EQ(k9i.item<int64_t>(), 8);
  auto [k2, k2i] = dt({3, 1, 2, 1, 3, 0.5, 3}).kthvalue(2);
  EXPECT_EQ(k2i.item<int64_t>(), 3);
  auto [kn, kni] = dt({3, 1, kNaN, 1, 2, kNaN, 3}).kthvalue(6);
  EXPECT_TRUE(std::isnan(kn.item<double>()));
  EXPECT_EQ(kni.item<int64_t>(), 2);
  auto [md, mdi] = y.median(0);
  EXPECT_EQ(md.item<double>(), 5);
  EXPECT_EQ(mdi.item<int64_t>(), 4);
  auto [mo, moi] = y.mode(0);
  EXPECT_EQ(mo.item<double>(), 5);
  EXPECT_EQ(moi.item<int64_t>(), 10);
  std::vector<double> big;
  for (int i = 0; i < 200; ++i) big.push_back((i * 7) % 13);
  const Tensor b = torch::tensor(big, kiln::kDouble);
  EXPECT_EQ(std::get<1>(b.kthvalue(100)).item<int64_t>(), 38);
  EXPECT_EQ(std::get<1>(b.median(0)).item<int64_t>(), 90);
  EXPECT_EQ(std::get<0>(b.mode(0)).item<double>(), 0);
  EXPECT_EQ(std::get<1>(b.mode(0)).item<int64_t>(), 52);
  // NaN: median gives the first NaN, nanmedian leaves them out.
  const Tensor x = dt({3, 1, kNaN, 1, 2, kNaN, 3});
  auto [mn, mni] = x.median(0);
  EXPECT_TRUE(std::isnan(mn.item<double>()));
  EXPECT_EQ(mni.item<int64_t>(), 2);
  auto [nm, nmi] = x.nanmedian(0);
  EXPECT_EQ(nm.item<double>(), 2);
  EXPECT_EQ(nmi.item<int64_t>(), 4);
  EXPECT_TRUE(std::isnan(x.median().item<double>()));
  EXPECT_EQ(x.nanmedian().item<double>(), 2);
  EXPECT_EQ(dt({3, 1, 2, 1, 3, 0.5, 3}).median().item<double>(), 2);
  auto [tie, tie_at] = dt({2, 1, 2, 1, 3}).mode(0);  // the smallest of the most frequent, its last position
  EXPECT_EQ(tie.item<double>(), 1);
  EXPECT_EQ(tie_at.item<int64_t>(), 3);
  EXPECT_TRUE(std::isnan(torch::empty({0}).median().item<double>()));
}

TEST(Sorting, KeepdimAndShapes) {
  const Tensor m = torch::tensor({{3., 1., 2.}, {1., 5., 0.}});
  auto [v, i] = m.kthvalue(2, 1, true);
  EXPECT_EQ(v.sizes(), (std::vector<int64_t>{2, 1}));
  expect_values(v, {2, 1});
  expect_longs(i, {2, 0});
  auto [mv, mi] = torch::median(m, 0);
  EXPECT_EQ(mv.sizes(), (std::vector<int64_t>{3}));
  expect_values(mv, {1, 1, 0});
  expect_longs(mi, {1, 0, 1});
  auto [s, si] = torch::tensor(4.0).kthvalue(1);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 4);
  EXPECT_EQ(std::get<0>(m.mode(1, true)).sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(std::get<0>(m.topk(2, 0)).sizes(), (std::vector<int64_t>{2, 3}));
}

TEST(Sorting, SearchsortedAndBucketizeAsLibtorch) {
  const Tensor s = dt({1, 2, 2, 4, kNaN});
  const Tensor q = dt({0, 1, 2, 3, 5, kNaN, kInf});
  // libtorch's binary search on plain comparisons: a NaN in the sequence is passed over.
  expect_longs(torch::searchsorted(s, q), {0, 0, 1, 5, 5, 5, 5});
  expect_longs(torch::searchsorted(s, q, false, true), {0, 1, 5, 5, 5, 5, 5});
  expect_longs(torch::searchsorted(s, q, false, false, "right"), {0, 1, 5, 5, 5, 5, 5});
  expect_longs(torch::bucketize(q, s), {0, 0, 1, 5, 5, 5, 5});
  expect_longs(torch::bucketize(q, s, false, true), {0, 1, 5, 5, 5, 5, 5});
  const Tensor scalar = torch::searchsorted(s, 2.0);
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item<int64_t>(), 1);
  EXPECT_EQ(torch::bucketize(3, dt({1, 2, 4})).item<int64_t>(), 2);
  const Tensor rows = torch::tensor({{1., 3., 5.}, {2., 4., 6.}}), values = torch::tensor({{3., 6.}, {1., 4.}});
  expect_longs(torch::searchsorted(rows, values), {1, 3, 0, 1});
  expect_longs(torch::searchsorted(rows, values, false, true), {2, 3, 0, 2});
  expect_longs(torch::searchsorted(dt({3, 1, 2}), dt({2.5, 0}), false, false, std::nullopt, longs({1, 2, 0})), {2, 0});
  expect_longs(torch::searchsorted(dt({1, 2, 3}), longs({2, 4})), {1, 3});  // promoted to a common dtype
  expect_longs(torch::bucketize(torch::tensor({{0.5, 2.5}, {1.5, 9.}}), torch::tensor({1., 2.})), {0, 2, 1, 2});
}

TEST(Sorting, UniqueAndUniqueConsecutiveAsLibtorch) {
  auto [u, inv, counts] = torch::_unique2(longs({3, 1, 2, 1, 3, 3}), true, true, true);
  expect_longs(u, {1, 2, 3});
  expect_longs(inv, {2, 0, 1, 0, 2, 2});
  expect_longs(counts, {2, 1, 3});
  auto [u1, inv1] = torch::_unique(torch::tensor({{3., 1.}, {2., 1.}}));
  EXPECT_EQ(u1.dtype(), kiln::kFloat);
  expect_values(u1, {1, 2, 3});
  EXPECT_EQ(inv1.numel(), 0);  // not asked for
  auto [u2, inv2] = torch::_unique(longs({4, 4}), true, true);
  EXPECT_EQ(inv2.sizes(), (std::vector<int64_t>{2}));
  auto [nu, ninv, ncounts] = torch::_unique2(dt({3, kNaN, 1, kNaN}), true, true, true);
  expect_values(nu, {1, 3, kNaN, kNaN});  // each NaN a value of its own, after the numbers
  expect_longs(ninv, {1, 2, 0, 3});
  auto [c, cinv, ccounts] = torch::unique_consecutive(longs({1, 1, 2, 2, 3, 1, 1}), true, true);
  expect_longs(c, {1, 2, 3, 1});
  expect_longs(cinv, {0, 0, 1, 1, 2, 3, 3});
  expect_longs(ccounts, {2, 2, 1, 2});
  auto [cd, cdinv, cdcounts] = torch::unique_consecutive(longs({1, 1, 1, 1, 2, 3}).reshape({3, 2}), true, true, 0);
  EXPECT_EQ(cd.sizes(), (std::vector<int64_t>{2, 2}));
  expect_longs(cd, {1, 1, 2, 3});
  expect_longs(cdinv, {0, 0, 1});
  expect_longs(cdcounts, {2, 1});
  auto [ud, udinv, udcounts] = torch::unique_dim(longs({1, 2, 0, 5, 1, 2, 0, 1}).reshape({4, 2}), 0, true, true, true);
  expect_longs(ud, {0, 1, 0, 5, 1, 2});
  expect_longs(udinv, {2, 1, 2, 0});
  expect_longs(udcounts, {1, 1, 2});
  auto [ud1, ud1inv, ud1counts] = torch::unique_dim(longs({1, 2, 1, 0, 5, 0}).reshape({2, 3}), 1, true, true, true);
  expect_longs(ud1, {1, 2, 0, 5});
  expect_longs(ud1inv, {0, 1, 0});
  expect_longs(ud1counts, {2, 1});
  EXPECT_EQ(std::get<0>(torch::_unique2(torch::empty({0}))).numel(), 0);
}

TEST(Sorting, GradientsGoToThePositionsPicked) {
  const gradcheck::Options o;
  auto values_of = [](auto f) { return [f](const TensorList& in) { return std::get<0>(f(in[0])); }; };
  EXPECT_TRUE(gradcheck::check(values_of([](const Tensor& x) { return x.sort(1); }), {gradcheck::randn({3, 5})}, o));
  EXPECT_TRUE(
      gradcheck::check(values_of([](const Tensor& x) { return x.sort(0, true); }), {gradcheck::randn({4, 3})}, o));
  EXPECT_TRUE(gradcheck::check(values_of([](const Tensor& x) { return x.topk(2, 1); }), {gradcheck::randn({3, 5})}, o));
  EXPECT_TRUE(
      gradcheck::check(values_of([](const Tensor& x) { return x.kthvalue(3, 1); }), {gradcheck::randn({3, 5})}, o));
  EXPECT_TRUE(
      gradcheck::check(values_of([](const Tensor& x) { return x.median(0, true); }), {gradcheck::randn({5, 3})}, o));
  EXPECT_TRUE(
      gradcheck::check(values_of([](const Tensor& x) { return x.nanmedian(1); }), {gradcheck::randn({3, 4})}, o));
  EXPECT_TRUE(gradcheck::check(values_of([](const Tensor& x) { return x.mode(1); }), {gradcheck::randn({3, 4})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return in[0].msort(); }, {gradcheck::randn({4, 2})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return in[0].median(); }, {gradcheck::randn({7})}, o));
  EXPECT_TRUE(gradcheck::check([](const TensorList& in) { return in[0].nanmedian(); }, {gradcheck::randn({2, 3})}, o));
}

TEST(Sorting, MedianOfAllSharesTheGradientAmongTies) {
  // libtorch: median() sends its gradient to every entry equal to the median, evenly.
  Tensor x = dt({1, 2, 2, 3}).requires_grad_();
  x.median().backward();
  expect_values(x.grad(), {0, 0.5, 0.5, 0});
  Tensor y = dt({1, 2, 3, 4}).requires_grad_();
  auto [v, i] = y.median(0);  // along a dim: to the position picked
  v.backward();
  expect_values(y.grad(), {0, 1, 0, 0});
  Tensor t = torch::rand({4}, torch::requires_grad());
  EXPECT_EQ(std::get<0>(t.sort()).grad_fn()->name(), "SortBackward0");
  EXPECT_EQ(std::get<0>(t.topk(2)).grad_fn()->name(), "TopkBackward0");
  EXPECT_EQ(std::get<0>(t.kthvalue(2)).grad_fn()->name(), "KthvalueBackward0");
  EXPECT_EQ(std::get<0>(t.median(0)).grad_fn()->name(), "MedianBackward1");
  EXPECT_EQ(t.median().grad_fn()->name(), "MedianBackward0");
  EXPECT_EQ(t.nanmedian().grad_fn()->name(), "NanmedianBackward0");
  EXPECT_EQ(std::get<0>(t.mode(0)).grad_fn()->name(), "ModeBackward0");
  EXPECT_EQ(t.msort().grad_fn()->name(), "SortBackward0");
}

TEST(Sorting, BadInputsThrowNamingTheOpAndShape) {
  const Tensor m = torch::rand({2, 3});
  EXPECT_THROW_WITH(m.topk(4, 1), "topk: selected index k out of range (k 4, dim 1 of size 3, input [2, 3] float32)");
  EXPECT_THROW_WITH(m.topk(-1, 1), "topk: selected index k out of range");
  EXPECT_THROW_WITH(m.topk(1, 2), "topk: dimension out of range");
  EXPECT_THROW_WITH(m.kthvalue(4, 1), "kthvalue: selected number k out of range for dimension 1 (k 4, input [2, 3]");
  EXPECT_THROW_WITH(m.kthvalue(0), "kthvalue: selected number k out of range");
  EXPECT_THROW_WITH(m.sort(3), "sort: dimension out of range");
  EXPECT_THROW_WITH(m.argsort(-3), "argsort: dimension out of range");
  EXPECT_THROW_WITH(torch::empty({2, 0}).median(1),
                    "median: expected reduction dim 1 to have non-zero size (input [2, 0]");
  EXPECT_THROW_WITH(torch::empty({2, 0}).mode(1), "mode: expected reduction dim 1");
  EXPECT_THROW_WITH(torch::empty({0}, kiln::kLong).median(), "median: expected a non-empty tensor");
  EXPECT_THROW_WITH(torch::searchsorted(torch::rand({2, 3}), torch::rand({3, 2})),
                    "boundaries tensor [2, 3] float32 and input value tensor [3, 2] float32");
  EXPECT_THROW_WITH(torch::searchsorted(torch::rand({3}), torch::rand({2}), true), "searchsorted: out_int32");
  EXPECT_THROW_WITH(torch::searchsorted(torch::rand({3}), torch::rand({2}), false, false, "middle"),
                    "'left' or 'right'");
  EXPECT_THROW_WITH(torch::searchsorted(torch::rand({3}), torch::rand({2}), false, true, "left"), "opposites");
  EXPECT_THROW_WITH(torch::searchsorted(torch::rand({3}), torch::rand({2}), false, false, std::nullopt, longs({0, 1})),
                    "sorter");
  EXPECT_THROW_WITH(torch::bucketize(torch::rand({3}), torch::rand({2, 3})),
                    "bucketize: boundaries tensor must be 1 dimension, but got dim(2)");
  EXPECT_THROW_WITH(torch::unique_dim(m, 2), "unique_dim: dimension out of range");
}

// --- lazy programs against the eager interpreter ---

std::vector<double> run_with(bool lazy, const std::string& backend, const std::function<Tensor()>& program) {
  const std::string saved_backend = kiln::config().backend;
  const bool saved_lazy = kiln::is_lazy();
  kiln::config().backend = backend;
  kiln::set_lazy(lazy);
  std::vector<double> out = program().to_vector<double>();
  kiln::set_lazy(saved_lazy);
  kiln::config().backend = saved_backend;
  return out;
}

TEST(Sorting, LazyFusedProgramsMatchEagerInterpretedOnes) {
  for (kiln::ScalarType dtype : {kiln::kFloat, kiln::kDouble}) {
    auto program = [dtype] {
      kiln::manual_seed(7);
      Tensor x = torch::randn({6, 9}, kiln::TensorOptions(dtype)).requires_grad_();
      Tensor y = (x * 2).tanh();  // elementwise producers and consumers around each library kernel
      auto [sorted, order] = y.sort(1, true);
      auto [top, top_at] = (y + 1).topk(3, 0);
      auto [run_max, run_at] = y.cummax(1);
      Tensor parts = torch::cat({sorted.reshape({-1}), order.to(dtype).reshape({-1}), top.reshape({-1}),
                                 top_at.to(dtype).reshape({-1}), (y * 0.3).cumsum(1).exp().reshape({-1}),
                                 (y + 2).cumprod(0).reshape({-1}), y.logcumsumexp(1).reshape({-1}),
                                 run_max.reshape({-1}), run_at.to(dtype).reshape({-1}), std::get<0>(y.median(1)),
                                 std::get<0>(y.kthvalue(2, 0)), y.median().reshape({1}),
                                 torch::searchsorted(sorted.detach(), y.detach()).to(dtype).reshape({-1})});
      Tensor loss = (parts * parts).sum();
      loss.backward();
      return torch::cat({parts.detach(), x.grad().reshape({-1})});
    };
    const std::vector<double> eager = run_with(false, "interp", program), lazy = run_with(true, "halide", program);
    ASSERT_EQ(eager.size(), lazy.size());
    // float32 kernels round each step where the interpreter rounds each node's float64 result.
    const double rtol = dtype == kiln::kFloat ? 2e-3 : 1e-12, atol = dtype == kiln::kFloat ? 2e-4 : 1e-12;
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_NEAR(lazy[i], eager[i], atol + rtol * std::fabs(eager[i])) << dtype << " element " << i;
  }
}

}  // namespace
