// group_norm, instance_norm, local_response_norm, unfold/fold, prelu, embedding_bag,
// affine_grid, grid_sample (bicubic too), antialiased interpolation, nearest-exact and area in 1-D
// and 3-D, and the margin losses of losses_more.h: values as libtorch 1.13 computes them for the
// same float64 inputs (nn_more_reference.h, resample_reference.h, resample_more_reference.h),
// float64 gradient checks, bad inputs; and
// gumbel_softmax's properties and index_put_ with accumulate.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"
#include "gradcheck.h"
#include "nn_more_reference.h"
#include "resample_more_reference.h"
#include "resample_reference.h"

namespace {

namespace F = torch::nn::functional;
namespace ref = libtorch_reference;
using gradcheck::check;
using torch::Tensor;

// sin(a i + b) over the flat index i, as the reference program's inputs.
Tensor wave(kiln::IntArrayRef shape, double a, double b) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return torch::arange(n, torch::kDouble).mul(a).add(b).sin().view(shape);
}

// The same values as a float64 leaf that requires grad.
Tensor leaf(kiln::IntArrayRef shape, double a, double b) { return gradcheck::leaf(wave(shape, a, b)); }

void expect_values(const Tensor& t, const std::vector<double>& values, double tol = 1e-9) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], values[i], tol) << "element " << i;
}

gradcheck::Options first_order() {
  gradcheck::Options o;
  o.gradgrad = false;
  return o;
}

}  // namespace

TEST(NnMore, NormalizationAsLibtorch) {
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3), w = wave({4}, 1.1, 0.2), b = wave({4}, 0.9, -0.4);
  expect_values(F::group_norm(x, F::GroupNormFuncOptions(2).weight(w).bias(b).eps(1e-4)), ref::group_norm_2);
  expect_values(F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b)), ref::instance_norm_affine);
  Tensor rm = wave({4}, 0.3, 0.1), rv = wave({4}, 0.5, 0.2).abs() + 0.5;
  expect_values(
      F::instance_norm(
          x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(true).momentum(0.2)),
      ref::instance_norm_out);
  expect_values(rm, ref::instance_norm_running_mean);
  expect_values(rv, ref::instance_norm_running_var);
  expect_values(
      F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(false)),
      ref::instance_norm_eval);
  expect_values(F::local_response_norm(x, F::LocalResponseNormFuncOptions(3).alpha(0.5).beta(0.6).k(1.5)), ref::lrn_4d);
  expect_values(F::local_response_norm(wave({2, 5, 4}, 0.4, 0.1), F::LocalResponseNormFuncOptions(2)), ref::lrn_3d);
  expect_values(F::local_response_norm(wave({1, 4, 2, 2, 3}, 0.4, 0.1), F::LocalResponseNormFuncOptions(4).alpha(0.3)),
                ref::lrn_5d);
}

TEST(NnMore, NormalizationModules) {
  torch::nn::GroupNorm gn(2, 4);
  EXPECT_EQ(gn->parameters().size(), 2u);
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3);
  expect_values(gn(x), F::group_norm(x, F::GroupNormFuncOptions(2)).to_vector<double>());

  // Running statistics: updated while training, used in evaluation.
  torch::nn::InstanceNorm2d in2(torch::nn::InstanceNorm2dOptions(4).track_running_stats(true).momentum(0.2));
  in2->to(torch::kDouble);
  EXPECT_EQ(in2->buffers().size(), 3u);
  in2(x);
  Tensor rm = torch::zeros({4}, torch::kDouble), rv = torch::ones({4}, torch::kDouble);
  F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).momentum(0.2));
  expect_values(in2->running_mean, rm.to_vector<double>());
  expect_values(in2->running_var, rv.to_vector<double>());
  in2->eval();
  expect_values(
      in2(x), F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(false))
                  .to_vector<double>());
  // Unbatched input.
  torch::nn::InstanceNorm1d in1(torch::nn::InstanceNorm1dOptions(3).affine(true));
  EXPECT_EQ(in1->parameters().size(), 2u);
  EXPECT_EQ(in1(torch::randn({3, 5})).sizes().vec(), (std::vector<int64_t>{3, 5}));

  torch::nn::BatchNorm3d bn3(4);
  EXPECT_EQ(bn3(torch::randn({2, 4, 2, 2, 3})).sizes().vec(), (std::vector<int64_t>{2, 4, 2, 2, 3}));
  torch::nn::LocalResponseNorm lrn(torch::nn::LocalResponseNormOptions(3).alpha(0.5).beta(0.6).k(1.5));
  expect_values(lrn(x.to(torch::kFloat)), ref::lrn_4d, 1e-5);
}

TEST(NnMore, UnfoldFoldAsLibtorch) {
  Tensor img = wave({2, 3, 5, 6}, 0.37, 0.2);
  Tensor cols = F::unfold(img, F::UnfoldFuncOptions({2, 3}).dilation({2, 1}).padding({1, 0}).stride({1, 2}));
  EXPECT_EQ(cols.sizes().vec(), (std::vector<int64_t>{2, 18, 10}));
  expect_values(cols, ref::unfold);
  Tensor folded = F::fold(wave({2, 12, 10}, 0.23, 0.4),
                          F::FoldFuncOptions({5, 6}, {2, 3}).dilation({2, 1}).padding({1, 0}).stride({1, 2}));
  EXPECT_EQ(folded.sizes().vec(), (std::vector<int64_t>{2, 2, 5, 6}));
  expect_values(folded, ref::fold);
  // Unbatched forms, and the modules.
  expect_values(F::unfold(img[0], F::UnfoldFuncOptions(2)),
                F::unfold(img, F::UnfoldFuncOptions(2))[0].to_vector<double>());
  torch::nn::Unfold unfold(torch::nn::UnfoldOptions(2).stride(2));
  torch::nn::Fold fold(torch::nn::FoldOptions({4, 6}, 2).stride(2));
  Tensor tiles = wave({1, 2, 4, 6}, 0.3, 0.1);
  expect_values(fold(unfold(tiles)), tiles.to_vector<double>());  // non-overlapping blocks: fold undoes unfold
}

TEST(NnMore, PReLUAndEmbeddingBagAsLibtorch) {
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3);
  expect_values(F::prelu(x, torch::full({1}, 0.25, torch::kDouble)), ref::prelu_1);
  expect_values(F::prelu(x, wave({4}, 1.1, 0.2)), ref::prelu_c);
  torch::nn::PReLU prelu(torch::nn::PReLUOptions().num_parameters(4).init(0.1));
  EXPECT_EQ(prelu->weight.sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_NEAR(prelu(torch::full({1, 4}, -2.0)).sum().item<double>(), -0.8, 1e-6);

  Tensor weight = wave({10, 3}, 0.41, 0.3);
  Tensor idx = torch::tensor({1, 2, 4, 5, 4, 3, 2, 9}, torch::kLong), off = torch::tensor({0, 4, 4}, torch::kLong);
  expect_values(F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum)),
                ref::bag_sum);
  expect_values(F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off)), ref::bag_mean);
  expect_values(F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kMax)),
                ref::bag_max);
  expect_values(
      F::embedding_bag(
          idx, weight,
          F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum).per_sample_weights(wave({8}, 0.8, 0.5))),
      ref::bag_psw);
  expect_values(F::embedding_bag(idx, weight,
                                 F::EmbeddingBagFuncOptions()
                                     .offsets(torch::tensor({0, 3, 8}, torch::kLong))
                                     .include_last_offset(true)
                                     .padding_idx(4)),
                ref::bag_last_pad);
  expect_values(F::embedding_bag(idx.view({2, 4}), weight, F::EmbeddingBagFuncOptions().mode(torch::kMax)),
                ref::bag_2d);

  torch::nn::EmbeddingBag bag(torch::nn::EmbeddingBagOptions(10, 3).mode(torch::kSum).padding_idx(4));
  EXPECT_EQ(bag->weight[4].abs().sum().item<double>(), 0.0);
  expect_values(bag(idx, off),
                F::embedding_bag(idx, bag->weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum))
                    .to_vector<double>());
}

TEST(NnMore, SamplingAsLibtorch) {
  Tensor theta = wave({2, 2, 3}, 0.9, 0.1) * 0.8;
  expect_values(F::affine_grid(theta, {2, 3, 4, 5}, false), ref::affine_grid);
  expect_values(F::affine_grid(theta, {2, 3, 4, 5}, true), ref::affine_grid_ac);
  expect_values(F::affine_grid(wave({1, 3, 4}, 0.6, 0.2), {1, 1, 2, 3, 2}, false), ref::affine_grid_3d);
  Tensor in = wave({2, 3, 4, 5}, 0.53, 0.1), grid = wave({2, 3, 4, 2}, 0.77, 0.3) * 1.3;
  auto sample = [&](F::GridSampleFuncOptions o) { return F::grid_sample(in, grid, o); };
  expect_values(sample(F::GridSampleFuncOptions()), ref::gs_bilinear_zeros);
  expect_values(sample(F::GridSampleFuncOptions().padding_mode(torch::kBorder).align_corners(true)),
                ref::gs_bilinear_border_ac);
  expect_values(sample(F::GridSampleFuncOptions().padding_mode(torch::kReflection)), ref::gs_bilinear_reflection);
  expect_values(sample(F::GridSampleFuncOptions().mode(torch::kNearest)), ref::gs_nearest_zeros);
  expect_values(
      sample(F::GridSampleFuncOptions().mode(torch::kNearest).padding_mode(torch::kBorder).align_corners(true)),
      ref::gs_nearest_border_ac);
}

TEST(NnMore, MarginLossesAsLibtorch) {
  Tensor in = wave({3, 4}, 0.9, 0.2);
  Tensor t = torch::tensor({{3, 0, -1, 1}, {1, 2, 3, 0}, {-1, 1, 2, 3}}, torch::kLong);
  expect_values(F::multilabel_margin_loss(in, t, F::MultilabelMarginLossFuncOptions(torch::kNone)), ref::mlm);
  expect_values(F::multilabel_margin_loss(in, t), ref::mlm_mean);
  Tensor soft = torch::tensor({{1., 0., 0., 1.}, {0., 1., 1., 0.}, {1., 1., 1., 0.}}, torch::kDouble);
  Tensor w = wave({4}, 1.2, 0.3).abs();
  expect_values(F::multilabel_soft_margin_loss(
                    in, soft, F::MultilabelSoftMarginLossFuncOptions().weight(w).reduction(torch::kNone)),
                ref::mlsm);
  Tensor y = torch::tensor({2, 0, 3}, torch::kLong);
  expect_values(F::multi_margin_loss(in, y, F::MultiMarginLossFuncOptions().reduction(torch::kNone)), ref::mm_p1);
  expect_values(F::multi_margin_loss(in, y, F::MultiMarginLossFuncOptions().p(2).margin(0.7).weight(w)), ref::mm_p2_w);
  Tensor ysign = torch::tensor({1., -1., 1.}, torch::kDouble);
  expect_values(F::cosine_embedding_loss(in, wave({3, 4}, 0.4, 1.0), ysign,
                                         F::CosineEmbeddingLossFuncOptions().margin(0.1).reduction(torch::kNone)),
                ref::cel);
  // The modules call the same functions.
  torch::nn::MultiMarginLoss mm(torch::nn::MultiMarginLossOptions().p(2).margin(0.7).weight(w));
  expect_values(mm(in, y), ref::mm_p2_w);
  torch::nn::CosineEmbeddingLoss ce(torch::nn::CosineEmbeddingLossOptions().margin(0.1).reduction(torch::kNone));
  expect_values(ce(in, wave({3, 4}, 0.4, 1.0), ysign), ref::cel);
  torch::nn::MultiLabelMarginLoss mlm(torch::kNone);
  expect_values(mlm(in, t), ref::mlm);
}

TEST(NnMore, GradientsInFloat64) {
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::group_norm(v[0], F::GroupNormFuncOptions(2).weight(v[1]).bias(v[2]));
      },
      {leaf({2, 4, 3}, 0.7, 0.3), leaf({4}, 1.1, 0.2), leaf({4}, 0.9, -0.4)}, first_order()));
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) { return F::instance_norm(v[0], F::InstanceNormFuncOptions().weight(v[1])); },
      {leaf({2, 2, 4}, 0.7, 0.3), leaf({2}, 1.1, 0.2)}, first_order()));
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::local_response_norm(v[0], F::LocalResponseNormFuncOptions(3).alpha(0.5));
      },
      {leaf({1, 4, 3}, 0.7, 0.3)}));
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::unfold(v[0], F::UnfoldFuncOptions(2).padding(1).stride({1, 2}));
      },
      {leaf({1, 2, 3, 4}, 0.37, 0.2)}));
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::fold(v[0], F::FoldFuncOptions({3, 4}, 2).padding(1).stride({1, 2}));
      },
      {leaf({1, 8, 12}, 0.37, 0.2)}));
  EXPECT_TRUE(check([](const torch::TensorList& v) { return F::prelu(v[0], v[1]); },
                    {leaf({2, 3, 2}, 0.7, 0.3), leaf({3}, 1.1, 0.2)}));
  Tensor idx = torch::tensor({1, 2, 4, 0, 4, 3}, torch::kLong), off = torch::tensor({0, 2, 2}, torch::kLong);
  for (auto mode : {torch::nn::EmbeddingBagMode(torch::kSum), torch::nn::EmbeddingBagMode(torch::kMean),
                    torch::nn::EmbeddingBagMode(torch::kMax)})
    EXPECT_TRUE(check(
        [&](const torch::TensorList& v) {
          return F::embedding_bag(idx, v[0], F::EmbeddingBagFuncOptions().offsets(off).mode(mode));
        },
        {leaf({5, 3}, 0.41, 0.3)}, first_order()))
        << mode.name();
  EXPECT_TRUE(check(
      [&](const torch::TensorList& v) {
        return F::embedding_bag(idx, v[0],
                                F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum).per_sample_weights(v[1]));
      },
      {leaf({5, 3}, 0.41, 0.3), leaf({6}, 0.8, 0.5)}, first_order()));
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::affine_grid(v[0], {1, 1, 2, 3}, false);
      },
      {leaf({1, 2, 3}, 0.9, 0.1)}));
  // Grid points away from pixel boundaries, where bilinear sampling is smooth.
  for (auto padding : {F::GridSamplePaddingMode(torch::kZeros), F::GridSamplePaddingMode(torch::kBorder),
                       F::GridSamplePaddingMode(torch::kReflection)})
    EXPECT_TRUE(check(
        [&](const torch::TensorList& v) {
          return F::grid_sample(v[0], v[1], F::GridSampleFuncOptions().padding_mode(padding));
        },
        {leaf({1, 2, 3, 4}, 0.53, 0.1), leaf({1, 2, 3, 2}, 0.77, 0.3)}, first_order()))
        << padding.name();
  Tensor t = torch::tensor({{3, 0, -1, 1}, {1, 2, 3, 0}}, torch::kLong);
  EXPECT_TRUE(check([&](const torch::TensorList& v) { return F::multilabel_margin_loss(v[0], t); },
                    {leaf({2, 4}, 0.9, 0.2)}, first_order()));
  Tensor soft = torch::tensor({{1., 0., 0., 1.}, {0., 1., 1., 0.}}, torch::kDouble);
  EXPECT_TRUE(check([&](const torch::TensorList& v) { return F::multilabel_soft_margin_loss(v[0], soft); },
                    {leaf({2, 4}, 0.9, 0.2)}));
  Tensor y = torch::tensor({2, 0}, torch::kLong);
  EXPECT_TRUE(check(
      [&](const torch::TensorList& v) { return F::multi_margin_loss(v[0], y, F::MultiMarginLossFuncOptions().p(2)); },
      {leaf({2, 4}, 0.9, 0.2)}, first_order()));
  Tensor ysign = torch::tensor({1., -1.}, torch::kDouble);
  EXPECT_TRUE(check([&](const torch::TensorList& v) { return F::cosine_embedding_loss(v[0], v[1], ysign); },
                    {leaf({2, 4}, 0.9, 0.2), leaf({2, 4}, 0.4, 1.0)}, first_order()));
}

TEST(NnMore, GumbelSoftmax) {
  torch::manual_seed(0);
  Tensor logits = gradcheck::leaf(wave({4, 5}, 0.9, 0.2));
  Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  expect_values(soft.sum(1), {1, 1, 1, 1});
  EXPECT_GT(soft.min().item<double>(), 0.0);
  Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true).dim(1));
  for (double v : hard.to_vector<double>()) EXPECT_TRUE(v == 0.0 || v == 1.0) << v;
  expect_values(hard.sum(1), {1, 1, 1, 1});
  // The hard sample's gradient is the soft sample's: a softmax's rows of gradient sum to zero.
  (hard * wave({4, 5}, 0.3, 0.1)).sum().backward();
  ASSERT_TRUE(logits.grad().defined());
  expect_values(logits.grad().sum(1), {0, 0, 0, 0}, 1e-12);
  // The noise follows kiln's generator.
  torch::manual_seed(7);
  Tensor a = F::gumbel_softmax(logits.detach());
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(a, F::gumbel_softmax(logits.detach())));
}

TEST(NnMore, IndexPutAccumulate) {
  Tensor acc = torch::zeros({5}, torch::kDouble);
  acc.index_put_({torch::tensor({0, 2, 2, 4, 0})}, torch::tensor({1., 2., 3., 4., 5.}, torch::kDouble), true);
  expect_values(acc, {6, 0, 5, 0, 4});
  Tensor m = torch::zeros({3, 2}, torch::kDouble);
  m.index_put_({torch::tensor({1, 1, 0})}, torch::ones({3, 2}, torch::kDouble), true);
  expect_values(m, {1, 1, 2, 2, 0, 0});
  // Gradients reach the values added, once per position listed.
  Tensor v = gradcheck::leaf(torch::tensor({1., 2., 3.}, torch::kDouble));
  Tensor base = torch::zeros({4}, torch::kDouble);
  base.index_put_({torch::tensor({3, 3, 1})}, v * 2, true);
  base.sum().backward();
  expect_values(v.grad(), {2, 2, 2});
}

TEST(NnMore, PrintsAsLibtorch) {
  auto printed = [](const auto& module) {
    std::ostringstream s;
    s << *module;
    return s.str();
  };
  EXPECT_EQ(printed(torch::nn::GroupNorm(2, 4)), ref::print_GroupNorm);
  EXPECT_EQ(printed(torch::nn::InstanceNorm2d(torch::nn::InstanceNorm2dOptions(4).affine(true))),
            ref::print_InstanceNorm2d);
  EXPECT_EQ(printed(torch::nn::InstanceNorm1d(3)), ref::print_InstanceNorm1d);
  EXPECT_EQ(printed(torch::nn::LocalResponseNorm(2)), ref::print_LocalResponseNorm);
  EXPECT_EQ(printed(torch::nn::BatchNorm3d(4)), ref::print_BatchNorm3d);
  EXPECT_EQ(printed(torch::nn::Unfold(torch::nn::UnfoldOptions({2, 3}).stride(2))), ref::print_Unfold);
  EXPECT_EQ(printed(torch::nn::Fold(torch::nn::FoldOptions({4, 5}, {2, 2}))), ref::print_Fold);
  EXPECT_EQ(printed(torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(3))), ref::print_PReLU);
  EXPECT_EQ(printed(torch::nn::EmbeddingBag(torch::nn::EmbeddingBagOptions(10, 3).mode(torch::kSum))),
            ref::print_EmbeddingBag);
  EXPECT_EQ(printed(torch::nn::EmbeddingBag(10, 3)), ref::print_EmbeddingBag2);
  EXPECT_EQ(printed(torch::nn::PixelShuffle(2)), ref::print_PixelShuffle);
  EXPECT_EQ(printed(torch::nn::PixelUnshuffle(2)), ref::print_PixelUnshuffle);
  EXPECT_EQ(printed(torch::nn::CosineSimilarity()), ref::print_CosineSimilarity);
  EXPECT_EQ(printed(torch::nn::PairwiseDistance()), ref::print_PairwiseDistance);
  EXPECT_EQ(printed(torch::nn::GLU()), ref::print_GLU);
  EXPECT_EQ(printed(torch::nn::KLDivLoss()), ref::print_KLDivLoss);
  EXPECT_EQ(printed(torch::nn::MarginRankingLoss()), ref::print_MarginRankingLoss);
  EXPECT_EQ(printed(torch::nn::HingeEmbeddingLoss()), ref::print_HingeEmbeddingLoss);
  EXPECT_EQ(printed(torch::nn::SoftMarginLoss()), ref::print_SoftMarginLoss);
  EXPECT_EQ(printed(torch::nn::CosineEmbeddingLoss()), ref::print_CosineEmbeddingLoss);
  EXPECT_EQ(printed(torch::nn::TripletMarginLoss()), ref::print_TripletMarginLoss);
  EXPECT_EQ(printed(torch::nn::PoissonNLLLoss()), ref::print_PoissonNLLLoss);
  EXPECT_EQ(printed(torch::nn::MultiMarginLoss()), ref::print_MultiMarginLoss);
  EXPECT_EQ(printed(torch::nn::MultiLabelMarginLoss()), ref::print_MultiLabelMarginLoss);
  EXPECT_EQ(printed(torch::nn::MultiLabelSoftMarginLoss()), ref::print_MultiLabelSoftMarginLoss);
  EXPECT_EQ(printed(torch::nn::ZeroPad2d(torch::nn::ZeroPad2dOptions({1, 2, 3, 4}))), ref::print_ZeroPad2d);
  EXPECT_EQ(printed(torch::nn::ConstantPad1d(torch::nn::ConstantPad1dOptions(2, 3.5))), ref::print_ConstantPad1d);
  EXPECT_EQ(printed(torch::nn::ConstantPad2d(torch::nn::ConstantPad2dOptions(1, 3.5))), ref::print_ConstantPad2d);
  EXPECT_EQ(printed(torch::nn::ConstantPad3d(torch::nn::ConstantPad3dOptions(1, 0.5))), ref::print_ConstantPad3d);
  EXPECT_EQ(printed(torch::nn::ReflectionPad1d(torch::nn::ReflectionPad1dOptions({1, 2}))), ref::print_ReflectionPad1d);
  EXPECT_EQ(printed(torch::nn::ReflectionPad2d(torch::nn::ReflectionPad2dOptions(1))), ref::print_ReflectionPad2d);
  EXPECT_EQ(printed(torch::nn::ReplicationPad1d(torch::nn::ReplicationPad1dOptions(2))), ref::print_ReplicationPad1d);
  EXPECT_EQ(printed(torch::nn::ReplicationPad2d(torch::nn::ReplicationPad2dOptions({1, 2, 3, 4}))),
            ref::print_ReplicationPad2d);
  EXPECT_EQ(printed(torch::nn::ReplicationPad3d(torch::nn::ReplicationPad3dOptions(1))), ref::print_ReplicationPad3d);
}

TEST(NnMore, ModulesOverFunctions) {
  Tensor a = wave({2, 3}, 0.7, 0.3), b = wave({2, 3}, 0.4, 1.0);
  expect_values(torch::nn::CosineSimilarity()(a, b), F::cosine_similarity(a, b).to_vector<double>());
  expect_values(torch::nn::PairwiseDistance(torch::nn::PairwiseDistanceOptions().p(3))(a, b),
                F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().p(3)).to_vector<double>());
  expect_values(torch::nn::GLU(torch::nn::GLUOptions(0))(wave({4, 3}, 0.7, 0.3)),
                F::glu(wave({4, 3}, 0.7, 0.3), 0).to_vector<double>());
  Tensor img = torch::arange(16.).view({1, 4, 2, 2});
  expect_values(torch::nn::PixelUnshuffle(2)(torch::nn::PixelShuffle(2)(img)), img.to_vector<double>());
  Tensor signs = torch::tensor({{1.0, -1.0, 1.0}, {-1.0, -1.0, 1.0}}, torch::kDouble);
  expect_values(torch::nn::SoftMarginLoss()(a, signs), F::soft_margin_loss(a, signs).to_vector<double>());
  expect_values(torch::nn::HingeEmbeddingLoss(torch::nn::HingeEmbeddingLossOptions().margin(2))(a, signs),
                F::hinge_embedding_loss(a, signs, F::HingeEmbeddingLossFuncOptions().margin(2)).to_vector<double>());
  expect_values(torch::nn::MarginRankingLoss()(a, b, signs), F::margin_ranking_loss(a, b, signs).to_vector<double>());
  expect_values(torch::nn::TripletMarginLoss()(a, b, a.flip(0)),
                F::triplet_margin_loss(a, b, a.flip(0)).to_vector<double>());
  expect_values(torch::nn::KLDivLoss(torch::kSum)(a.log_softmax(1), b.softmax(1)),
                F::kl_div(a.log_softmax(1), b.softmax(1), torch::kSum).to_vector<double>());
  expect_values(torch::nn::PoissonNLLLoss()(a, b.abs()), F::poisson_nll_loss(a, b.abs()).to_vector<double>());
  expect_values(torch::nn::MultiLabelSoftMarginLoss()(a, signs.clamp_min(0)),
                F::multilabel_soft_margin_loss(a, signs.clamp_min(0)).to_vector<double>());

  Tensor x = torch::arange(6.).view({1, 2, 3});
  expect_values(torch::nn::ReflectionPad1d(torch::nn::ReflectionPad1dOptions({2, 1}))(x),
                {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4});
  expect_values(torch::nn::ReplicationPad1d(torch::nn::ReplicationPad1dOptions({1, 2}))(x),
                {0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 5});
  expect_values(torch::nn::ConstantPad1d(torch::nn::ConstantPad1dOptions({1, 0}, 9))(x), {9, 0, 1, 2, 9, 3, 4, 5});
  Tensor cube = torch::ones({1, 1, 1, 1});
  Tensor padded = torch::nn::ConstantPad3d(torch::nn::ConstantPad3dOptions({1, 0, 0, 1, 1, 0}, 2))(cube);
  EXPECT_EQ(padded.sizes().vec(), (std::vector<int64_t>{1, 2, 2, 2}));
  expect_values(padded, {2, 2, 2, 2, 2, 1, 2, 2});
  Tensor zero_padded = torch::nn::ZeroPad2d(torch::nn::ZeroPad2dOptions({1, 0, 0, 1}))(cube.view({1, 1, 1}));
  expect_values(zero_padded, {0, 1, 0, 0});
  EXPECT_EQ(torch::nn::ReplicationPad3d(torch::nn::ReplicationPad3dOptions(1))(torch::ones({1, 2, 2, 2})).sizes().vec(),
            (std::vector<int64_t>{1, 4, 4, 4}));
  EXPECT_EQ(torch::nn::ReflectionPad2d(torch::nn::ReflectionPad2dOptions(1))(torch::ones({1, 2, 2})).sizes().vec(),
            (std::vector<int64_t>{1, 4, 4}));
}

TEST(NnMore, BadInputsThrow) {
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3);
  EXPECT_THROW_WITH(F::group_norm(x, F::GroupNormFuncOptions(3)), "group_norm: expected number of channels");
  EXPECT_THROW_WITH(F::group_norm(x, F::GroupNormFuncOptions(3)), "[2, 4, 3, 3]");
  EXPECT_THROW_WITH(F::group_norm(x, F::GroupNormFuncOptions(2).weight(torch::ones({3}, torch::kDouble))),
                    "group_norm: expected weight, bias");
  EXPECT_THROW_WITH(F::instance_norm(torch::zeros({2, 3, 1})), "instance_norm: expected more than 1 spatial element");
  EXPECT_THROW_WITH(F::instance_norm(torch::zeros({2, 3})),
                    "instance_norm: expected a floating point input of at least 3");
  EXPECT_THROW_WITH(F::instance_norm(x, F::InstanceNormFuncOptions().use_input_stats(false)),
                    "instance_norm: expected running_mean and running_var");
  EXPECT_THROW_WITH(torch::nn::InstanceNorm2d(4)(torch::zeros({2, 4})), "InstanceNorm2d: expected 3D or 4D input");
  EXPECT_THROW_WITH(F::local_response_norm(torch::zeros({2, 3}), 2), "local_response_norm: expected 3D or higher");
  EXPECT_THROW_WITH(F::unfold(torch::zeros({2, 3}), F::UnfoldFuncOptions(2)), "unfold: expected a 3D (C, H, W) or 4D");
  EXPECT_THROW_WITH(F::unfold(torch::zeros({1, 1, 2, 2}), F::UnfoldFuncOptions(3)), "unfold: given an image of 2 x 2");
  EXPECT_THROW_WITH(F::fold(torch::zeros({1, 5, 4}), F::FoldFuncOptions({3, 3}, 2)),
                    "fold: expected the size of input [1, 5, 4]");
  EXPECT_THROW_WITH(F::fold(torch::zeros({1, 8, 3}), F::FoldFuncOptions({3, 3}, 2)),
                    "to be the number of sliding blocks 2 * 2 = 4, but got input [1, 8, 3]");
  EXPECT_THROW_WITH(F::prelu(torch::zeros({2, 3}), torch::zeros({2})), "prelu: mismatch of parameter numbers");
  EXPECT_THROW_WITH(F::prelu(torch::zeros({2, 3}), torch::zeros({2})), "[2, 3]");
  Tensor table = torch::zeros({4, 3});
  EXPECT_THROW_WITH(F::embedding_bag(torch::tensor({1, 2}), table), "embedding_bag: offsets has to be a 1D int64");
  EXPECT_THROW_WITH(
      F::embedding_bag(torch::tensor({{1, 2}}), table, F::EmbeddingBagFuncOptions().offsets(torch::tensor({0}))),
      "embedding_bag: if input is 2D, then offsets has to be null");
  EXPECT_THROW_WITH(
      F::embedding_bag(torch::tensor({1, 7}), table, F::EmbeddingBagFuncOptions().offsets(torch::tensor({0}))),
      "embedding_bag: index 7 is out of range for weight [4, 3]");
  EXPECT_THROW_WITH(
      F::embedding_bag(torch::tensor({1, 2}), table,
                       F::EmbeddingBagFuncOptions().offsets(torch::tensor({0})).per_sample_weights(torch::ones({2}))),
      "per_sample_weights is only supported for mode='sum'");
  EXPECT_THROW_WITH(F::grid_sample(torch::zeros({1, 1, 3, 3}), torch::zeros({2, 2, 2, 2})),
                    "grid_sample: expected grid and input to have same batch size, but got input [1, 1, 3, 3]");
  EXPECT_THROW_WITH(F::grid_sample(torch::zeros({1, 1, 3, 3}), torch::zeros({2, 2, 2, 2})), "grid [2, 2, 2, 2]");
  EXPECT_THROW_WITH(F::affine_grid(torch::zeros({2, 3, 3}), {2, 1, 3, 3}),
                    "affine_grid: expected a batch of 2D affine matrices of shape [2, 2, 3] for size [2, 1, 3, 3], got "
                    "theta [2, 3, 3]");
  EXPECT_THROW_WITH(F::multilabel_margin_loss(torch::zeros({2, 3}), torch::zeros({2, 4}, torch::kLong)),
                    "multilabel_margin_loss: inconsistent target [2, 4]");
  EXPECT_THROW_WITH(F::multi_margin_loss(torch::zeros({2, 3}), torch::zeros({3}, torch::kLong)),
                    "multi_margin_loss: inconsistent target [3]");
  EXPECT_THROW_WITH(F::multi_margin_loss(torch::zeros({2, 3}), torch::zeros({3}, torch::kLong)), "for input [2, 3]");
  EXPECT_THROW_WITH(
      F::multi_margin_loss(torch::zeros({2, 3}), torch::zeros({2}, torch::kLong), F::MultiMarginLossFuncOptions().p(3)),
      "multi_margin_loss: only p == 1 and p == 2 supported");
  EXPECT_THROW_WITH(F::cosine_embedding_loss(torch::zeros({2, 3}), torch::zeros({2, 4}), torch::ones({2})),
                    "cosine_embedding_loss: expected input1 and input2 of one shape");
  EXPECT_THROW_WITH(torch::zeros({3}).index_put_({torch::tensor({5})}, torch::ones({1}), true),
                    "index 5 is out of bounds");
}

// Bicubic (both align_corners, up, down, by scale factor, float32), trilinear and 5-D nearest
// interpolation, and 5-D grid_sample in every mode and padding, against libtorch 1.13.
TEST(NnMore, BicubicTrilinearAndVolumetricGridSampleAsLibtorch) {
  using Opts = F::InterpolateFuncOptions;
  const Tensor img = wave({2, 2, 3, 4}, 0.7, 0.3);
  expect_values(F::interpolate(img, Opts().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic).align_corners(false)),
                ref::bicubic_up);
  expect_values(F::interpolate(img, Opts().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic).align_corners(true)),
                ref::bicubic_up_ac);
  expect_values(F::interpolate(wave({1, 2, 6, 5}, 0.37, 0.1),
                               Opts().size(std::vector<int64_t>{4, 3}).mode(torch::kBicubic).align_corners(false)),
                ref::bicubic_down);
  expect_values(F::interpolate(img, Opts().scale_factor(std::vector<double>{1.7, 2.5}).mode(torch::kBicubic)),
                ref::bicubic_scale);
  expect_values(F::interpolate(img.to(torch::kFloat), Opts().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic)),
                ref::bicubic_float, 5e-6);  // libtorch sums the 16 taps in another order
  const Tensor vol = wave({1, 2, 2, 3, 4}, 0.53, 0.2);
  expect_values(F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kTrilinear)),
                ref::trilinear);
  expect_values(
      F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kTrilinear).align_corners(true)),
      ref::trilinear_ac);
  expect_values(F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 5, 6}).mode(torch::kNearest)), ref::nearest3d);

  const Tensor grid = wave({2, 2, 3, 2, 3}, 0.81, 0.4) * 1.3, input = wave({2, 2, 3, 4, 5}, 0.29, 0.7);
  const std::vector<double>* expected[] = {
      &ref::grid5d_trilinear_zeros,     &ref::grid5d_trilinear_zeros_ac,   &ref::grid5d_trilinear_border,
      &ref::grid5d_trilinear_border_ac, &ref::grid5d_trilinear_reflection, &ref::grid5d_trilinear_reflection_ac,
      &ref::grid5d_nearest_zeros,       &ref::grid5d_nearest_zeros_ac,     &ref::grid5d_nearest_border,
      &ref::grid5d_nearest_border_ac,   &ref::grid5d_nearest_reflection,   &ref::grid5d_nearest_reflection_ac};
  int k = 0;
  for (int nearest = 0; nearest < 2; ++nearest)
    for (int padding = 0; padding < 3; ++padding)
      for (int align = 0; align < 2; ++align) {
        auto options = F::GridSampleFuncOptions().align_corners(align == 1);
        if (nearest) options.mode(torch::kNearest);
        if (padding == 1) options.padding_mode(torch::kBorder);
        if (padding == 2) options.padding_mode(torch::kReflection);
        const Tensor out = F::grid_sample(input, grid, options);
        EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 2, 2, 3, 2}));
        expect_values(out, *expected[k++]);
      }
}

TEST(NnMore, BicubicTrilinearAndVolumetricGridSampleGradients) {
  for (bool align : {false, true}) {
    EXPECT_TRUE(check(
        [align](const torch::TensorList& v) {
          return F::interpolate(
              v[0],
              F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 5}).mode(torch::kBicubic).align_corners(align));
        },
        {leaf({1, 2, 3, 3}, 0.7, 0.3)}))
        << align;
    EXPECT_TRUE(check(
        [align](const torch::TensorList& v) {
          return F::interpolate(v[0], F::InterpolateFuncOptions()
                                          .size(std::vector<int64_t>{3, 3, 4})
                                          .mode(torch::kTrilinear)
                                          .align_corners(align));
        },
        {leaf({1, 1, 2, 2, 3}, 0.7, 0.3)}, first_order()))
        << align;
  }
  for (int padding = 0; padding < 3; ++padding)
    EXPECT_TRUE(check(
        [padding](const torch::TensorList& v) {
          auto options = F::GridSampleFuncOptions().align_corners(false);
          if (padding == 1) options.padding_mode(torch::kBorder);
          if (padding == 2) options.padding_mode(torch::kReflection);
          return F::grid_sample(v[0], v[1], options);
        },
        {leaf({1, 2, 2, 3, 3}, 0.29, 0.7), gradcheck::leaf(wave({1, 2, 2, 1, 3}, 0.81, 0.4) * 0.9)}, first_order()))
        << padding;
}

TEST(NnMore, BicubicTrilinearAndVolumetricGridSampleBadInputs) {
  EXPECT_THROW_WITH(
      F::interpolate(
          wave({1, 2, 3}, 0.1, 0.2),
          F::InterpolateFuncOptions().size(std::vector<int64_t>{4}).mode(torch::kBicubic).align_corners(false)),
      "interpolate: got 3D input [1, 2, 3] float64, but bicubic mode needs 4D input");
  EXPECT_THROW_WITH(
      F::interpolate(wave({1, 2, 3, 3}, 0.1, 0.2),
                     F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4, 4}).mode(torch::kTrilinear)),
      "interpolate: size shape must match input shape");
  EXPECT_THROW_WITH(
      F::interpolate(wave({1, 2, 3, 3, 3}, 0.1, 0.2),
                     F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 4, 4}).mode(torch::kBilinear)),
      "interpolate: mode bilinear of 5D input [1, 2, 3, 3, 3] float64 is not supported by kiln");
  EXPECT_THROW_WITH(F::grid_sample(wave({1, 2, 3, 3, 3}, 0.1, 0.2), wave({1, 2, 2, 2, 2}, 0.1, 0.2)),
                    "grid_sample: kiln samples 4D input");
  EXPECT_THROW_WITH(F::grid_sample(wave({1, 2, 3, 3, 3}, 0.1, 0.2), wave({2, 2, 2, 2, 3}, 0.1, 0.2)),
                    "grid_sample: expected grid and input to have same batch size");
}

namespace {

using Opts = F::InterpolateFuncOptions;

F::GridSampleFuncOptions bicubic(int padding, bool align_corners) {
  auto options = F::GridSampleFuncOptions().mode(torch::kBicubic).align_corners(align_corners);
  if (padding == 1) options.padding_mode(torch::kBorder);
  if (padding == 2) options.padding_mode(torch::kReflection);
  return options;
}

}  // namespace

TEST(ResampleMore, BicubicGridSampleAsLibtorch) {
  const Tensor input = wave({2, 2, 3, 4}, 0.29, 0.7), grid = wave({2, 3, 2, 2}, 0.81, 0.4) * 1.3;
  const std::vector<double>* expected[] = {&ref::grid_bicubic_zeros,      &ref::grid_bicubic_zeros_ac,
                                           &ref::grid_bicubic_border,     &ref::grid_bicubic_border_ac,
                                           &ref::grid_bicubic_reflection, &ref::grid_bicubic_reflection_ac};
  for (int padding = 0; padding < 3; ++padding)
    for (int align = 0; align < 2; ++align) {
      const Tensor out = F::grid_sample(input, grid, bicubic(padding, align == 1));
      EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 2, 3, 2}));
      SCOPED_TRACE(testing::Message() << "padding " << padding << " align_corners " << align);
      expect_values(out, *expected[padding * 2 + align]);
    }
  expect_values(F::grid_sample(input.to(torch::kFloat), grid.to(torch::kFloat), bicubic(0, false)),
                ref::grid_bicubic_float, 2e-6);
}

TEST(ResampleMore, AntialiasedInterpolationAsLibtorch) {
  const Tensor img = wave({1, 2, 9, 11}, 0.7, 0.3);
  auto down = [&](torch::InterpolateMode mode, bool align) {
    return F::interpolate(img, Opts().size(std::vector<int64_t>{4, 5}).mode(mode).align_corners(align).antialias(true));
  };
  expect_values(down(torch::kBilinear, false), ref::aa_bilinear_down);
  expect_values(down(torch::kBilinear, true), ref::aa_bilinear_down_ac);
  expect_values(down(torch::kBicubic, false), ref::aa_bicubic_down);
  expect_values(down(torch::kBicubic, true), ref::aa_bicubic_down_ac);
  expect_values(F::interpolate(img, Opts()
                                        .scale_factor(std::vector<double>{0.45, 0.3})
                                        .mode(torch::kBilinear)
                                        .align_corners(false)
                                        .antialias(true)),
                ref::aa_bilinear_scale);
  // Upscaling the height, downscaling the width.
  const Tensor mixed = F::interpolate(
      img, Opts().size(std::vector<int64_t>{13, 4}).mode(torch::kBicubic).align_corners(false).antialias(true));
  EXPECT_EQ(mixed.sizes().vec(), (std::vector<int64_t>{1, 2, 13, 4}));
  expect_values(mixed, ref::aa_bicubic_mixed);
  expect_values(
      F::interpolate(
          img.to(torch::kFloat),
          Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBilinear).align_corners(false).antialias(true)),
      ref::aa_bilinear_float, 1e-6);
}

TEST(ResampleMore, NearestExactAndAreaIn1DAnd3DAsLibtorch) {
  const Tensor vol = wave({1, 2, 2, 3, 4}, 0.53, 0.2), line = wave({1, 2, 7}, 0.8, 0.3);
  expect_values(F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 5, 3}).mode(torch::kNearestExact)),
                ref::nearest_exact3d);
  expect_values(F::interpolate(line, Opts().size(std::vector<int64_t>{4}).mode(torch::kNearestExact)),
                ref::nearest_exact1d);
  const Tensor area = F::interpolate(vol, Opts().size(std::vector<int64_t>{1, 2, 3}).mode(torch::kArea));
  EXPECT_EQ(area.sizes().vec(), (std::vector<int64_t>{1, 2, 1, 2, 3}));
  expect_values(area, ref::area3d);
  expect_values(F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kArea)), ref::area3d_up);
  expect_values(F::interpolate(line, Opts().size(std::vector<int64_t>{3}).mode(torch::kArea)), ref::area1d);
  // Unbatched [C, D, H, W] pools too.
  expect_values(torch::adaptive_avg_pool3d(vol[0], {1, 2, 3}), ref::area3d);
}

TEST(ResampleMore, Gradients) {
  for (int padding = 0; padding < 3; ++padding)
    EXPECT_TRUE(
        check([padding](const torch::TensorList& v) { return F::grid_sample(v[0], v[1], bicubic(padding, false)); },
              {gradcheck::leaf(wave({1, 2, 3, 3}, 0.29, 0.7)), gradcheck::leaf(wave({1, 2, 2, 2}, 0.81, 0.4) * 0.9)},
              first_order()))
        << padding;
  for (bool cubic : {false, true})
    EXPECT_TRUE(check(
        [cubic](const torch::TensorList& v) {
          return F::interpolate(v[0], Opts()
                                          .size(std::vector<int64_t>{2, 4})
                                          .mode(cubic ? torch::InterpolateMode(torch::kBicubic)
                                                      : torch::InterpolateMode(torch::kBilinear))
                                          .align_corners(false)
                                          .antialias(true));
        },
        {gradcheck::leaf(wave({1, 1, 5, 3}, 0.7, 0.3))}))
        << cubic;
  EXPECT_TRUE(check(
      [](const torch::TensorList& v) {
        return F::interpolate(v[0], Opts().size(std::vector<int64_t>{1, 2, 3}).mode(torch::kArea)) +
               F::interpolate(v[0], Opts().size(std::vector<int64_t>{1, 2, 3}).mode(torch::kNearestExact));
      },
      {gradcheck::leaf(wave({1, 1, 2, 3, 4}, 0.53, 0.2))}));
}

TEST(ResampleMore, BadInputs) {
  EXPECT_THROW_WITH(F::grid_sample(wave({1, 2, 3, 3, 3}, 0.1, 0.2), wave({1, 2, 2, 2, 3}, 0.1, 0.2), bicubic(0, false)),
                    "grid_sample: bicubic interpolation only supports 4D input, got input [1, 2, 3, 3, 3]");
  EXPECT_THROW_WITH(
      F::interpolate(wave({1, 2, 3, 3, 3}, 0.1, 0.2),
                     Opts().size(std::vector<int64_t>{2, 2, 2}).mode(torch::kTrilinear).antialias(true)),
      "interpolate: Anti-alias option is only supported for bilinear and bicubic modes (of 4D input), got mode "
      "trilinear and input [1, 2, 3, 3, 3]");
  EXPECT_THROW_WITH(
      F::interpolate(wave({1, 2, 3, 3}, 0.1, 0.2), Opts().size(std::vector<int64_t>{2, 2}).antialias(true)),
      "interpolate: Anti-alias option is only supported for bilinear and bicubic modes");
  EXPECT_THROW_WITH(
      F::interpolate(wave({1, 2, 3, 3, 3}, 0.1, 0.2), Opts().size(std::vector<int64_t>{2, 2}).mode(torch::kArea)),
      "interpolate: size shape must match input shape");
  EXPECT_THROW_WITH(torch::adaptive_avg_pool3d(wave({2, 3, 3}, 0.1, 0.2), {1, 1, 1}),
                    "adaptive_avg_pool3d: expected a 4D or 5D input, got [2, 3, 3]");
  EXPECT_THROW_WITH(torch::adaptive_avg_pool3d(wave({1, 2, 3, 3, 3}, 0.1, 0.2), {1, 0, 1}),
                    "adaptive_avg_pool3d: output_size must be positive, got [1, 0, 1]");
  EXPECT_THROW_WITH(torch::_upsample_nearest_exact3d(wave({1, 2, 3, 3}, 0.1, 0.2), {2, 2, 2}),
                    "_upsample_nearest_exact3d: expected a 5D input (N, C, spatial...), got [1, 2, 3, 3]");
}
