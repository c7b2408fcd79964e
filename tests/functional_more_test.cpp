// nn::functional's distances, shuffles, glu, kl_div, the margin losses, Poisson NLL and pad's
// modes: values as libtorch 1.13 computes them for the same float64 inputs, float64 gradient checks,
// and bad inputs.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"
#include "gradcheck.h"

namespace {

namespace F = torch::nn::functional;
using gradcheck::check;
using gradcheck::randn;
using gradcheck::uniform;

torch::Tensor a() { return torch::tensor({{1.0, -2.0, 3.0}, {0.5, 0.0, -1.5}}, torch::kDouble); }
torch::Tensor b() { return torch::tensor({{2.0, 1.0, -1.0}, {1.0, 4.0, 0.25}}, torch::kDouble); }
torch::Tensor signs() { return torch::tensor({{1.0, -1.0, 1.0}, {-1.0, -1.0, 1.0}}, torch::kDouble); }

void expect_values(const torch::Tensor& t, std::vector<int64_t> sizes, std::vector<double> values) {
  EXPECT_EQ(t.sizes().vec(), sizes);
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], values[i], 1e-9) << "element " << i;
}

}  // namespace

TEST(FunctionalMore, ValuesAsLibtorch) {
  expect_values(F::normalize(a(), F::NormalizeFuncOptions().p(1).dim(1)), {2, 3},
                {0.166666666667, -0.333333333333, 0.5, 0.25, 0, -0.75});
  expect_values(F::cosine_similarity(a(), b(), F::CosineSimilarityFuncOptions().dim(1)), {2},
                {-0.327326835354, 0.0191389750588});
  expect_values(F::cosine_similarity(a(), torch::zeros({2, 3}, torch::kDouble)), {2}, {0, 0});
  expect_values(F::pairwise_distance(a(), b(), F::PairwiseDistanceFuncOptions().p(3)), {2},
                {4.51435772989, 4.11113998136});
  expect_values(F::pixel_shuffle(torch::arange(16.).view({1, 4, 2, 2}), 2), {1, 1, 4, 4},
                {0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15});
  expect_values(F::pixel_unshuffle(torch::arange(16.).view({1, 1, 4, 4}), 2), {1, 4, 2, 2},
                {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  expect_values(F::glu(a().narrow(1, 0, 2), F::GLUFuncOptions(1)), {2, 1}, {0.119202922022, 0.25});
  torch::Tensor lp = torch::log_softmax(a(), 1);
  expect_values(F::kl_div(lp, torch::softmax(b(), 1), F::KLDivFuncOptions(torch::kBatchMean)), {}, {1.44989542013});
  expect_values(F::kl_div(lp, torch::tensor({{0.0, 0.5, 0.5}, {1.0, 0.0, 0.0}}, torch::kDouble),
                          F::KLDivFuncOptions(torch::kNone)),
                {2, 3}, {0, 2.21984902658, -0.280150973416, 0.554956919642, 0, 0});
  expect_values(F::kl_div(lp, torch::log_softmax(b(), 1), F::KLDivFuncOptions(torch::kSum).log_target(true)), {},
                {2.89979084026});
  expect_values(F::soft_margin_loss(a(), signs()), {}, {0.642902415476});
  expect_values(F::margin_ranking_loss(a(), b(), signs(), F::MarginRankingLossFuncOptions().margin(0.5)), {}, {0.625});
  expect_values(
      F::hinge_embedding_loss(a(), signs(), F::HingeEmbeddingLossFuncOptions().margin(2).reduction(torch::kNone)),
      {2, 3}, {1, 4, 3, 1.5, 2, -1.5});
  expect_values(F::triplet_margin_loss(a(), b(), a().flip(0), F::TripletMarginLossFuncOptions().margin(3).swap(true)),
                {}, {4.33651994502});
  expect_values(F::poisson_nll_loss(a(), b().abs() * 2, F::PoissonNLLLossFuncOptions().full(true)), {},
                {5.87797995255});
  expect_values(
      F::poisson_nll_loss(a().abs(), b().abs(), F::PoissonNLLLossFuncOptions().log_input(false).reduction(torch::kSum)),
      {}, {80.4827443601});
}

TEST(FunctionalMore, PadInEveryMode) {
  torch::Tensor img = torch::arange(6.).view({1, 2, 3});
  expect_values(F::pad(img, F::PadFuncOptions({2, 1}).mode(torch::kReflect)), {1, 2, 6},
                {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4});
  expect_values(F::pad(img, F::PadFuncOptions({1, 2}).mode(torch::kReplicate)), {1, 2, 6},
                {0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 5});
  expect_values(F::pad(img, F::PadFuncOptions({1, 1}).mode(torch::kCircular)), {1, 2, 5},
                {2, 0, 1, 2, 0, 5, 3, 4, 5, 3});
  expect_values(F::pad(img, F::PadFuncOptions({1, 0}).value(9)), {1, 2, 4}, {9, 0, 1, 2, 9, 3, 4, 5});
  EXPECT_TRUE(check(
      [](const torch::TensorList& in) {
        return F::pad(in[0], F::PadFuncOptions({2, 1, 1, 0}).mode(torch::kReflect));
      },
      {randn({1, 2, 3, 3})}));
}

TEST(FunctionalMore, GradientsInFloat64) {
  const torch::Tensor y = signs();
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::normalize(in[0]); }, {randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::cosine_similarity(in[0], in[1]); },
                    {randn({2, 3}), randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::pairwise_distance(in[0], in[1]); },
                    {randn({2, 3}), randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::pixel_shuffle(in[0], 2); }, {randn({1, 4, 2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::pixel_unshuffle(in[0], 2); }, {randn({2, 1, 2, 4})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::glu(in[0]); }, {randn({3, 4})}));
  EXPECT_TRUE(
      check([](const torch::TensorList& in) { return F::kl_div(in[0], in[1], F::KLDivFuncOptions(torch::kBatchMean)); },
            {randn({2, 3}), uniform({2, 3}, 0.1, 1.0)}));
  EXPECT_TRUE(check([&](const torch::TensorList& in) { return F::soft_margin_loss(in[0], y); }, {randn({2, 3})}));
  EXPECT_TRUE(check([&](const torch::TensorList& in) { return F::margin_ranking_loss(in[0], in[1], y); },
                    {randn({2, 3}), randn({2, 3})}));
  EXPECT_TRUE(check([&](const torch::TensorList& in) { return F::hinge_embedding_loss(in[0], y); },
                    {uniform({2, 3}, 0.1, 0.9)}));
  EXPECT_TRUE(check(
      [](const torch::TensorList& in) {
        return F::triplet_margin_loss(in[0], in[1], in[2], F::TripletMarginLossFuncOptions().margin(5));
      },
      {randn({2, 3}), randn({2, 3}), randn({2, 3})}));
  EXPECT_TRUE(check([](const torch::TensorList& in) { return F::poisson_nll_loss(in[0], in[1]); },
                    {randn({2, 3}), uniform({2, 3}, 0.5, 3.0)}));
}

TEST(FunctionalMore, BadInputsThrow) {
  EXPECT_THROW_WITH(F::pixel_shuffle(torch::ones({1, 3, 2, 2}), 2),
                    "pixel_shuffle: expects its input's 'channel' "
                    "dimension to be divisible by the square of "
                    "upscale_factor");
  EXPECT_THROW_WITH(F::pixel_unshuffle(torch::ones({1, 1, 3, 4}), 2), "pixel_unshuffle: expects height and width");
  EXPECT_THROW_WITH(F::glu(torch::ones({3})), "glu: Halving dimension must be even");
  EXPECT_THROW_WITH(F::soft_margin_loss(torch::ones({3}), torch::ones({2})), "soft_margin_loss: input [3] float32");
  EXPECT_THROW_WITH(F::triplet_margin_loss(torch::ones({2, 3}), torch::ones({3}), torch::ones({2, 3})),
                    "triplet_margin_loss: All inputs should have same dimension");
}
