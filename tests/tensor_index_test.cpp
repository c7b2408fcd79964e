// Tensor::index / index_put_ with torch::indexing, and the rearranging ops (repeat, tile, flip,
// roll, tril/triu, diag, splits, einsum): values and error texts as libtorch 1.13 gives them, and
// float64 gradient checks.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"
#include "gradcheck.h"

namespace {

using namespace torch::indexing;
using gradcheck::check;
using gradcheck::randn;

std::vector<int64_t> longs(const torch::Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<double> doubles(const torch::Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> sizes(const torch::Tensor& t) { return t.sizes().vec(); }

}  // namespace

TEST(TensorIndex, BasicIndicesMakeViews) {
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  EXPECT_EQ(sizes(x.index({Slice(), 0})), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(sizes(x.index({"...", 1})), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sizes(x.index({Ellipsis, 1})), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sizes(x.index({None, 1, Slice(None, None, 2)})), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(sizes(x.index({false})), (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(sizes(x.index({true, 0})), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(longs(x.index({1, Slice(1, None), -1})), (std::vector<int64_t>{19, 23}));
  EXPECT_TRUE(x.index({0, Slice(0, 2)}).is_alias_of(x));
}

TEST(TensorIndex, TensorIndicesAsLibtorch) {
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  torch::Tensor i1 = torch::tensor({1, 0, -1}), i2 = torch::tensor({0, 3, 2});
  // Adjacent tensor indices: the result stays in their place.
  EXPECT_EQ(longs(x.index({Slice(), i1, i2})), (std::vector<int64_t>{4, 3, 10, 16, 15, 22}));
  EXPECT_EQ(sizes(x.index({Slice(), i1, i2})), (std::vector<int64_t>{2, 3}));
  // Separated ones: the broadcast index dims come first.
  torch::Tensor apart = x.index({i1.slice(0, 0, 2), Slice(), i2.slice(0, 0, 2)});
  EXPECT_EQ(sizes(apart), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(longs(apart), (std::vector<int64_t>{12, 16, 20, 3, 7, 11}));
  EXPECT_EQ(sizes(x.index({Slice(), i1.view({3, 1}), i2.view({1, 3})})), (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(sizes(x.index({0, Slice(), i2})), (std::vector<int64_t>{3, 3}));
  torch::Tensor mask = x.index({0}) > 5;
  EXPECT_EQ(longs(x.index({1, mask})), (std::vector<int64_t>{18, 19, 20, 21, 22, 23}));
  EXPECT_EQ(sizes(x.index({Slice(), mask})), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(sizes(x.index({torch::tensor({true, false})})), (std::vector<int64_t>{1, 3, 4}));
}

TEST(TensorIndex, BadIndicesThrowLibtorchsMessages) {
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  EXPECT_THROW_WITH(x.index({5}), "index 5 is out of bounds for dimension 0 with size 2");
  EXPECT_THROW_WITH(x.index({0, 0, 0, 0}), "too many indices for tensor of dimension 3");
  EXPECT_THROW_WITH(x.index({torch::tensor({7})}), "index 7 is out of bounds for dimension 0 with size 2");
  EXPECT_THROW_WITH(x.index({torch::tensor({1.0})}), "tensors used as indices must be long");
  EXPECT_THROW_WITH(x.index({"...", "..."}), "single ellipsis");
  EXPECT_THROW_WITH(x.index({torch::ones({3}, torch::kBool)}), "the shape of the mask [3] at index 0 does not match");
  EXPECT_THROW_WITH(Slice(0, 2, 0), "step must be greater than zero");
}

TEST(TensorIndex, IndexPutWritesAsLibtorch) {
  torch::Tensor y = torch::zeros({3, 4});
  y.index_put_({Slice(), 1}, 5);
  y.index_put_({torch::tensor({0, 2}), torch::tensor({3, 0})}, torch::tensor({7.0, 8.0}));
  y.index_put_({y > 6}, -1);
  EXPECT_EQ(doubles(y), (std::vector<double>{0, 5, 0, -1, 0, 5, 0, 0, -1, 5, 0, 0}));
  torch::Tensor z = torch::zeros({2, 3, 4});
  z.index_put_({Slice(), torch::tensor({0, 2}), torch::tensor({1, 3})},
               torch::arange(4).view({2, 2}).to(torch::kFloat));
  EXPECT_EQ(doubles(z.sum(0)), (std::vector<double>{0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}));
  // Repeated positions: the last write wins.
  torch::Tensor r = torch::zeros({3});
  r.index_put_({torch::tensor({1, 1})}, torch::tensor({2.0, 3.0}));
  EXPECT_EQ(doubles(r), (std::vector<double>{0, 3, 0}));
  EXPECT_THROW_WITH(y.index_put_({torch::tensor({0, 1})}, torch::ones({3})),
                    "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]");
}

TEST(TensorIndex, IndexingDifferentiates) {
  torch::Tensor rows = torch::tensor({2, 0, 2}), cols = torch::tensor({1, 3, 0});
  EXPECT_TRUE(check(
      [&](const torch::TensorList& in) {
        return in[0].index({rows, Slice(), cols});
      },
      {randn({3, 2, 4})}));
  EXPECT_TRUE(check(
      [&](const torch::TensorList& in) {
        return in[0].index({Slice(1, None), rows.slice(0, 0, 2)});
      },
      {randn({3, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].index({in[0] > 0}); }, {randn({3, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].masked_select(in[0] > 0); }, {randn({5})}));
  // index_put_ into a copy: gradients reach both the base and the values.
  EXPECT_TRUE(check(
      [&](const torch::TensorList& in) {
        torch::Tensor out = in[0].clone();
        out.index_put_({rows.slice(0, 0, 2), cols.slice(0, 0, 2)}, in[1]);
        return out;
      },
      {randn({3, 4}), randn({2})}));
  torch::Tensor w = torch::ones({3, 4}, torch::requires_grad());
  torch::Tensor c = w * 1;
  c.index_put_({Slice(), 0}, 0);
  c.sum().backward();
  EXPECT_EQ(doubles(w.grad().index({Slice(), 0})), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(doubles(w.grad().index({Slice(), 1})), (std::vector<double>{1, 1, 1}));
}

TEST(TensorIndex, NonzeroAndMaskedSelect) {
  EXPECT_EQ(longs(torch::tensor({0, 1, 0, 2}).nonzero()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(sizes(torch::tensor({0, 1, 0, 2}).nonzero()), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(sizes(torch::tensor(5).nonzero()), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(sizes(torch::tensor(0).nonzero()), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(longs(torch::eye(2).nonzero()), (std::vector<int64_t>{0, 0, 1, 1}));
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  EXPECT_EQ(longs(x.masked_select(x > 20)), (std::vector<int64_t>{21, 22, 23}));
  EXPECT_THROW_WITH(x.masked_select(x), "expected a bool mask");
}

// --- rearrangements ---

TEST(TensorRearrange, ValuesAsLibtorch) {
  torch::Tensor t = torch::arange(6).view({2, 3});
  EXPECT_EQ(sizes(t.repeat({2, 1, 2})), (std::vector<int64_t>{2, 2, 6}));
  EXPECT_EQ(longs(t.repeat({1, 2}).select(0, 0)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(sizes(t.tile({2})), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(longs(t.roll(1)), (std::vector<int64_t>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(longs(t.roll({1, -1}, {0, 1})), (std::vector<int64_t>{4, 5, 3, 1, 2, 0}));
  EXPECT_EQ(longs(t.flip({0, 1})), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(doubles(torch::ones({3, 4}).tril(-1)), (std::vector<double>{0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(doubles(torch::ones({3, 4}).triu(1)), (std::vector<double>{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(longs(torch::tensor({1, 2}).diag(1)), (std::vector<int64_t>{0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_EQ(longs(torch::tensor({1, 2}).diag(-1)), (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(longs(t.diag(1)), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(longs(t.diag(-1)), (std::vector<int64_t>{3}));
  EXPECT_EQ(torch::arange(9).view({3, 3}).trace().item<int64_t>(), 12);
  EXPECT_EQ(torch::arange(9).view({3, 3}).trace().dtype(), torch::kLong);
  EXPECT_EQ(longs(torch::arange(24).view({2, 3, 4}).diagonal(1, 1, 2)), (std::vector<int64_t>{1, 6, 11, 13, 18, 23}));
  EXPECT_EQ(sizes(t.split({1, 2}, 1)[1]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(sizes(t.chunk(2, 1)[1]), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(sizes(torch::split_with_sizes(t, {1, 1}, 0)[0]), (std::vector<int64_t>{1, 3}));
  torch::Tensor m = torch::ones({3, 3});
  m.tril_();
  EXPECT_DOUBLE_EQ(m.sum().item<double>(), 6);
}

TEST(TensorRearrange, BadArgumentsThrowLibtorchsMessages) {
  torch::Tensor x = torch::arange(24).view({2, 3, 4});
  EXPECT_THROW_WITH(x.repeat({2}),
                    "Number of dimensions of repeat dims can not be smaller than number of dimensions "
                    "of tensor");
  EXPECT_THROW_WITH(x.flip({0, 0}), "dim 0 appears multiple times in the list of dims");
  EXPECT_THROW_WITH(x.roll({1, 2}, {0}), "shifts and dimensions must align. shifts: 2, dims:1");
  EXPECT_THROW_WITH(x.roll({1, 2}), "shifts and dimensions must align. shifts: 2, dims:0");
  EXPECT_THROW_WITH(x.split_with_sizes({1, 1}, 1),
                    "split_with_sizes expects split_sizes to sum exactly to 3 (input "
                    "tensor's size at dimension 1), but got split_sizes=[1, 1]");
  EXPECT_THROW_WITH(x.diag(), "matrix or a vector expected");
  EXPECT_THROW_WITH(torch::arange(3).tril(), "tril: input tensor must have at least 2 dimensions");
  EXPECT_THROW_WITH(x.diagonal(0, 1, 1), "diagonal dimensions cannot be identical 1, 1");
  EXPECT_THROW_WITH(x.trace(), "trace: expected a matrix, but got tensor with dim 3");
}

TEST(TensorRearrange, GradientsInFloat64) {
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].repeat({2, 1, 3}); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].tile({2}); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].flip({0, -1}); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].roll({2, -1}, {1, 0}); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].roll(4); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].tril(1); }, {randn({2, 3, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].triu(-1); }, {randn({3, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].diag(1); }, {randn({3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].diag(-1); }, {randn({3, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].diagonal(0, 2, 0); }, {randn({3, 2, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return in[0].trace(); }, {randn({3, 3})}));
  EXPECT_TRUE(check(
      [](const torch::TensorList& in) {
        return in[0].split_with_sizes({1, 2}, 1)[1] * 2;
      },
      {randn({2, 3})}));
}

// --- einsum ---

TEST(Einsum, CommonFormsMatchLibtorch) {
  torch::Tensor f = torch::arange(6.).view({2, 3});
  EXPECT_EQ(doubles(torch::einsum("ij,kj", {f, f})), (std::vector<double>{5, 14, 14, 50}));
  EXPECT_EQ(sizes(torch::einsum("ij", {f})), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sizes(torch::einsum("ji", {f})), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(sizes(torch::einsum("ba", {f})), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(doubles(torch::einsum("Ab,ab->aA", {f, f})), (std::vector<double>{5, 14, 14, 50}));
  EXPECT_EQ(doubles(torch::einsum("...j,j", {f, torch::ones({3})})), (std::vector<double>{3, 12}));
  EXPECT_EQ(doubles(torch::einsum("i...->...", {f})), (std::vector<double>{3, 5, 7}));
  torch::Tensor sq = torch::arange(9.).view({3, 3});
  EXPECT_DOUBLE_EQ(torch::einsum("ii", {sq}).item<double>(), 12);
  EXPECT_EQ(doubles(torch::einsum("ii->i", {sq})), (std::vector<double>{0, 4, 8}));
  EXPECT_EQ(sizes(torch::einsum("i,j->ij", {torch::ones({2}), torch::ones({3})})), (std::vector<int64_t>{2, 3}));
  torch::Tensor a = torch::randn({4, 2, 3}), b = torch::randn({4, 3, 5});
  EXPECT_TRUE(torch::einsum("bij,bjk->bik", {a, b}).allclose(a.bmm(b), 1e-5, 1e-6));
  EXPECT_EQ(torch::einsum("ij,jk->ik", {torch::arange(6).view({2, 3}), torch::arange(6).view({3, 2})}).dtype(),
            torch::kLong);
}

TEST(Einsum, BadEquationsThrowLibtorchsMessages) {
  torch::Tensor t = torch::arange(6).view({2, 3});
  EXPECT_THROW_WITH(torch::einsum("ij,jk", {t}),
                    "einsum(): fewer operands were provided than specified in the equation");
  EXPECT_THROW_WITH(torch::einsum("ij", {t, t}),
                    "einsum(): more operands were provided than specified in the equation");
  EXPECT_THROW_WITH(torch::einsum("ijk", {t}),
                    "einsum(): the number of subscripts in the equation (3) does not match "
                    "the number of dimensions (2) for operand 0 and no ellipsis was given");
  EXPECT_THROW_WITH(torch::einsum("ii", {t}),
                    "einsum(): subscript i is repeated for operand 0 but the sizes don't "
                    "match, 3 != 2");
  EXPECT_THROW_WITH(torch::einsum("i1", {t}),
                    "einsum(): invalid subscript given at index 1 in the equation string, "
                    "subscripts must be in [a-zA-Z]");
  EXPECT_THROW_WITH(torch::einsum("ij->k", {t}),
                    "einsum(): output subscript k does not appear in the equation for any "
                    "input operand");
}

TEST(Einsum, GradientsInFloat64) {
  auto eq = [](const std::string& e) { return [e](const torch::TensorList& in) { return torch::einsum(e, in); }; };
  EXPECT_TRUE(check(eq("ij,jk->ik"), {randn({2, 3}), randn({3, 4})}));
  EXPECT_TRUE(check(eq("bij,bjk->bik"), {randn({2, 2, 3}), randn({2, 3, 2})}));
  EXPECT_TRUE(check(eq("ij->ji"), {randn({2, 3})}));
  EXPECT_TRUE(check(eq("ii->"), {randn({3, 3})}));
  EXPECT_TRUE(check(eq("i,j->ij"), {randn({2}), randn({3})}));
  EXPECT_TRUE(check(eq("ijk->j"), {randn({2, 3, 2})}));
  EXPECT_TRUE(check(eq("ij,ij,j->i"), {randn({2, 3}), randn({2, 3}), randn({3})}));
  EXPECT_TRUE(check(eq("...ij,...jk"), {randn({2, 2, 3}), randn({3, 2})}));
}
