// Transposed and 1-D convolutions, padding modes, 1-D and adaptive pooling, channel dropout and
// interpolate: values against libtorch 1.13 (tests/conv_modules_reference.h), default
// initialization against libtorch's after the same seed, float64 gradients against finite
// differences, and the errors for bad arguments.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <sstream>

#include "conv_modules_reference.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace {

using kiln::Tensor;
using kiln::TensorList;
namespace F = kiln::nn::functional;
namespace nn = kiln::nn;
namespace ref = libtorch_reference;

class ConvModules : public ::testing::Test {
 protected:
  void SetUp() override { kiln::manual_seed(0); }
};

// sin(a * i + b) over the flat index, the inputs the reference program used.
Tensor wave(kiln::IntArrayRef shape, double a, double b) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return kiln::sin(kiln::arange(n, kiln::kFloat64) * a + b).reshape(shape);
}

void expect_values(const Tensor& got, std::vector<int64_t> sizes, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.sizes().vec(), sizes);
  const auto values = got.contiguous().to(kiln::kFloat64).to_vector<double>();
  ASSERT_EQ(values.size(), want.size());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(values[i], want[i], tol) << "element " << i;
}

TEST_F(ConvModules, TransposedConvolutionsMatchLibtorch) {
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3), w = wave({4, 3, 3, 3}, 0.45, -0.2), b = wave({6}, 1.3, 0.1);
  expect_values(kiln::conv_transpose2d(x, w, b, 2, 1, 1, 2, 1), {2, 6, 6, 6}, ref::ct2d_s2_p1_op1_g2, 1e-9);
  Tensor w2 = wave({4, 2, 2, 3}, 0.31, 0.5);
  expect_values(
      F::conv_transpose2d(
          x, w2,
          F::ConvTranspose2dFuncOptions().stride({1, 2}).padding({0, 1}).output_padding({0, 1}).dilation({2, 1})),
      {2, 2, 5, 6}, ref::ct2d_dilated_nobias, 1e-9);
  Tensor x1 = wave({2, 4, 5}, 0.6, 0.2), w1 = wave({4, 3, 3}, 0.5, 0.1), b1 = wave({3}, 0.9, 0.4);
  expect_values(
      F::conv_transpose1d(x1, w1, F::ConvTranspose1dFuncOptions().bias(b1).stride(3).padding(1).output_padding(2)),
      {2, 3, 15}, ref::ct1d_s3_p1_op2, 1e-9);
  // Unbatched input gives the batched result's first item.
  expect_values(kiln::conv_transpose1d(x1[0], w1, b1, 3, 1, 2), {3, 15},
                std::vector<double>(ref::ct1d_s3_p1_op2.begin(), ref::ct1d_s3_p1_op2.begin() + 45), 1e-9);
}

// conv_transpose2d is conv2d's adjoint: <conv2d(y, w), x> = <y, conv_transpose2d(x, w)>.
TEST_F(ConvModules, TransposedConvolutionIsTheAdjointOfConvolution) {
  Tensor w = kiln::randn({6, 2, 3, 2}, kiln::kFloat64);  // conv2d: 4 -> 6 channels, groups 2
  Tensor y = kiln::randn({2, 4, 9, 8}, kiln::kFloat64);
  Tensor conv = kiln::conv2d(y, w, {}, {2, 3}, {1, 1}, {1, 2}, 2);
  Tensor x = kiln::randn(conv.sizes(), kiln::kFloat64);
  // output_padding recovers the input size the strided convolution rounded away.
  const int64_t oh = (conv.size(2) - 1) * 2 - 2 + 1 * (3 - 1) + 1, ow = (conv.size(3) - 1) * 3 - 2 + 2 * (2 - 1) + 1;
  Tensor back = kiln::conv_transpose2d(x, w, {}, {2, 3}, {1, 1}, {9 - oh, 8 - ow}, 2, {1, 2});
  ASSERT_EQ(back.sizes().vec(), y.sizes().vec());
  EXPECT_NEAR((conv * x).sum().item<double>(), (y * back).sum().item<double>(), 1e-9);
}

TEST_F(ConvModules, Conv1dAndPaddingModesMatchLibtorch) {
  Tensor x1 = wave({2, 4, 5}, 0.6, 0.2), w = wave({6, 2, 3}, 0.33, 0.7), b = wave({6}, 1.3, 0.1);
  expect_values(F::conv1d(x1, w, F::Conv1dFuncOptions().bias(b).stride(2).padding(1).dilation(2).groups(2)), {2, 6, 2},
                ref::conv1d_s2_p1_d2_g2, 1e-9);
  const std::vector<std::pair<kiln::PaddingMode, const std::vector<double>*>> modes = {
      {kiln::kReflect, &ref::conv1d_reflect},
      {kiln::kReplicate, &ref::conv1d_replicate},
      {kiln::kCircular, &ref::conv1d_circular}};
  for (const auto& [mode, want] : modes) {
    SCOPED_TRACE(mode.name());
    kiln::manual_seed(0);
    nn::Conv1d conv(nn::Conv1dOptions(4, 2, 3).padding(2).padding_mode(mode));
    kiln::autograd::NoGradGuard no_grad;
    expect_values(conv(x1.to(kiln::kFloat32)), {2, 2, 7}, *want, 1e-5);
  }
  kiln::manual_seed(0);
  nn::Conv2d conv(nn::Conv2dOptions(4, 2, 3).padding(1).padding_mode(kiln::kReflect));
  kiln::autograd::NoGradGuard no_grad;
  expect_values(conv(wave({2, 4, 3, 3}, 0.7, 0.3).to(kiln::kFloat32)), {2, 2, 3, 3}, ref::conv2d_reflect, 1e-5);
}

TEST_F(ConvModules, DefaultInitializationMatchesLibtorch) {
  kiln::manual_seed(0);
  nn::ConvTranspose2d ct(nn::ConvTranspose2dOptions(4, 6, {3, 2}).stride(2).groups(2));
  expect_values(ct->weight, {4, 3, 3, 2}, ref::init_ct2d_weight, 1e-7);
  expect_values(ct->bias, {6}, ref::init_ct2d_bias, 1e-7);
  kiln::manual_seed(1);
  nn::ConvTranspose1d ct1(3, 4, 2);
  expect_values(ct1->weight, {3, 4, 2}, ref::init_ct1d_weight, 1e-7);
  expect_values(ct1->bias, {4}, ref::init_ct1d_bias, 1e-7);
  kiln::manual_seed(2);
  nn::Conv1d c1(2, 3, 3);
  expect_values(c1->weight, {3, 2, 3}, ref::init_conv1d_weight, 1e-7);
  expect_values(c1->bias, {3}, ref::init_conv1d_bias, 1e-7);
  EXPECT_EQ(ct->named_parameters().size(), 2u);
  nn::ConvTranspose2d no_bias(nn::ConvTranspose2dOptions(2, 2, 3).bias(false));
  EXPECT_FALSE(no_bias->bias.defined());
  std::ostringstream printed;
  printed << *ct;
  EXPECT_EQ(printed.str(), "kiln::nn::ConvTranspose2d(4, 6, kernel_size=[3, 2], stride=[2, 2], groups=2)");
}

TEST_F(ConvModules, ConvTransposeOutputSizePicksOutputPadding) {
  nn::ConvTranspose2d ct(nn::ConvTranspose2dOptions(4, 6, {3, 2}).stride(2).groups(2));
  Tensor x = kiln::randn({2, 4, 3, 3});
  EXPECT_EQ(ct(x).sizes().vec(), (std::vector<int64_t>{2, 6, 7, 6}));
  EXPECT_EQ(ct->forward(x, std::vector<int64_t>{8, 6}).sizes().vec(), (std::vector<int64_t>{2, 6, 8, 6}));
  EXPECT_EQ(ct->forward(x, std::vector<int64_t>{2, 6, 8, 7}).sizes().vec(), (std::vector<int64_t>{2, 6, 8, 7}));
  EXPECT_THROW_WITH(ct->forward(x, std::vector<int64_t>{9, 6}), "ConvTranspose2d: requested an output size of [9, 6]");
  EXPECT_THROW_WITH(ct->forward(x, std::vector<int64_t>{9}), "ConvTranspose2d: output_size must have 2 or 4");
}

TEST_F(ConvModules, PoolingMatchesLibtorch) {
  Tensor p1 = wave({2, 3, 7}, 1.7, 0.2);
  auto [values, indices] =
      F::max_pool1d_with_indices(p1, F::MaxPool1dFuncOptions(3).stride(2).padding(1).ceil_mode(true));
  expect_values(values, {2, 3, 4}, ref::max_pool1d_ceil, 1e-9);
  expect_values(indices, {2, 3, 4}, ref::max_pool1d_ceil_indices, 0);
  nn::MaxPool1d dilated(nn::MaxPool1dOptions(2).stride(1).dilation(2));
  expect_values(dilated(p1), {2, 3, 5}, ref::max_pool1d_dilated, 1e-9);
  expect_values(std::get<1>(dilated->forward_with_indices(p1)), {2, 3, 5}, ref::max_pool1d_dilated_indices, 0);
  nn::AvgPool1d avg(nn::AvgPool1dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
  expect_values(avg(p1), {2, 3, 4}, ref::avg_pool1d_ceil_nopad, 1e-9);

  Tensor p2 = wave({2, 2, 5, 7}, 1.9, 0.4);
  expect_values(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({3, 4}))(p2), {2, 2, 3, 4},
                ref::adaptive_avg_pool2d_3x4, 1e-9);
  expect_values(kiln::adaptive_avg_pool1d(p1, 3), {2, 3, 3}, ref::adaptive_avg_pool1d_3, 1e-9);
  nn::AdaptiveMaxPool2d max2d(nn::AdaptiveMaxPool2dOptions({3, 4}));
  auto [max_values, max_indices] = max2d->forward_with_indices(p2);
  expect_values(max_values, {2, 2, 3, 4}, ref::adaptive_max_pool2d_3x4, 1e-9);
  expect_values(max_indices, {2, 2, 3, 4}, ref::adaptive_max_pool2d_3x4_indices, 0);
  auto [max1_values, max1_indices] = kiln::adaptive_max_pool1d(p1, 4);
  expect_values(max1_values, {2, 3, 4}, ref::adaptive_max_pool1d_4, 1e-9);
  expect_values(max1_indices, {2, 3, 4}, ref::adaptive_max_pool1d_4_indices, 0);
  // A missing output size keeps the input's; 1x1 is the global average; unbatched inputs pool too.
  EXPECT_EQ(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({3, std::nullopt}))(p2).sizes().vec(),
            (std::vector<int64_t>{2, 2, 3, 7}));
  expect_values(nn::AdaptiveAvgPool2d(1)(p2), {2, 2, 1, 1}, p2.mean({2, 3}).to_vector<double>(), 1e-9);
  expect_values(nn::AdaptiveMaxPool1d(4)(p1[1]), {3, 4},
                std::vector<double>(ref::adaptive_max_pool1d_4.begin() + 12, ref::adaptive_max_pool1d_4.end()), 1e-9);
}

TEST_F(ConvModules, InterpolateMatchesLibtorch) {
  using IO = F::InterpolateFuncOptions;
  Tensor u2 = wave({1, 2, 3, 4}, 0.9, 0.1), u1 = wave({1, 2, 5}, 0.8, 0.3);
  expect_values(F::interpolate(u2, IO().size(std::vector<int64_t>{5, 7})), {1, 2, 5, 7}, ref::nearest_5x7, 1e-9);
  expect_values(F::interpolate(u2, IO().scale_factor(std::vector<double>{1.7, 2.5})), {1, 2, 5, 10},
                ref::nearest_scale_1p7_2p5, 1e-9);
  expect_values(F::interpolate(u2, IO().size(std::vector<int64_t>{5, 3}).mode(kiln::kNearestExact)), {1, 2, 5, 3},
                ref::nearest_exact_5x3, 1e-9);
  expect_values(F::interpolate(u2, IO().size(std::vector<int64_t>{5, 7}).mode(kiln::kBilinear).align_corners(false)),
                {1, 2, 5, 7}, ref::bilinear_5x7, 1e-9);
  expect_values(F::interpolate(u2, IO().size(std::vector<int64_t>{5, 7}).mode(kiln::kBilinear).align_corners(true)),
                {1, 2, 5, 7}, ref::bilinear_5x7_align, 1e-9);
  expect_values(F::interpolate(u2, IO().scale_factor(std::vector<double>{1.5, 0.6}).mode(kiln::kBilinear)),
                {1, 2, 4, 2}, ref::bilinear_scale_1p5_0p6, 1e-9);
  expect_values(F::interpolate(u1, IO().size(std::vector<int64_t>{8}).mode(kiln::kLinear)), {1, 2, 8}, ref::linear_8,
                1e-9);
  expect_values(F::interpolate(u1, IO().scale_factor(std::vector<double>{2.3}).mode(kiln::kLinear).align_corners(true)),
                {1, 2, 11}, ref::linear_scale_2p3_align, 1e-9);
  expect_values(F::interpolate(u1.to(kiln::kFloat32), IO().scale_factor(std::vector<double>{1.5})), {1, 2, 7},
                ref::nearest1d_scale_1p5_float, 1e-6);
  expect_values(F::interpolate(u2, IO().size(std::vector<int64_t>{2, 3}).mode(kiln::kArea)), {1, 2, 2, 3},
                ref::area_2x3, 1e-9);
  nn::Upsample up(
      nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(kiln::kBilinear).align_corners(false));
  expect_values(up(u2.to(kiln::kFloat32)), {1, 2, 6, 8}, ref::upsample_bilinear_x2_float, 1e-6);
}

TEST_F(ConvModules, ChannelDropoutZeroesWholeChannels) {
  Tensor x = kiln::rand({8, 16, 3, 4}) + 1;  // no zeros of its own
  nn::Dropout2d dropout(0.25);
  Tensor y = dropout(x);
  auto kept = (y != 0).to(kiln::kFloat32).sum({2, 3}).to_vector<float>();  // per (n, c): 0 or 12
  int zeroed = 0;
  for (float k : kept) {
    EXPECT_TRUE(k == 0 || k == 12) << k;
    zeroed += k == 0;
  }
  EXPECT_GT(zeroed, 8);  // about 32 of 128
  EXPECT_LT(zeroed, 64);
  Tensor scaled = kiln::where(y != 0, y - x / 0.75, kiln::zeros_like(y));
  EXPECT_LT(scaled.abs().max().item<float>(), 1e-5);
  dropout->eval();
  EXPECT_TRUE(kiln::equal(dropout(x), x));
  // Unbatched [C, H, W], and the 1-D and 3-D forms.
  EXPECT_EQ(F::dropout2d(x[0], F::Dropout2dFuncOptions().p(0.5)).sizes().vec(), (std::vector<int64_t>{16, 3, 4}));
  EXPECT_EQ(nn::Dropout1d(0.5)(x[0]).sizes().vec(), (std::vector<int64_t>{16, 3, 4}));
  EXPECT_EQ(nn::Dropout3d(0.5)(x).sizes().vec(), (std::vector<int64_t>{8, 16, 3, 4}));
  EXPECT_TRUE(kiln::equal(F::dropout2d(x, F::Dropout2dFuncOptions().p(1.0)), kiln::zeros_like(x)));
}

TEST_F(ConvModules, Gradients) {
  using gradcheck::randn;
  struct Case {
    const char* name;
    gradcheck::Fn f;
    TensorList inputs;
  };
  auto ct2d = [](kiln::IntArrayRef s, kiln::IntArrayRef p, kiln::IntArrayRef op, int64_t g, kiln::IntArrayRef d) {
    // The sizes are copied: an IntArrayRef views its caller's braces, gone once ct2d returns.
    return [s = s.vec(), p = p.vec(), op = op.vec(), g, d = d.vec()](const TensorList& t) {
      return kiln::conv_transpose2d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), s, p, op, g, d);
    };
  };
  using IO = F::InterpolateFuncOptions;
  const std::vector<Case> cases = {
      {"conv_transpose2d stride 2 padding 1 output_padding 1",
       ct2d(2, 1, 1, 1, 1),
       {randn({2, 3, 3, 3}), randn({3, 2, 4, 4}), randn({2})}},
      {"conv_transpose2d groups 2 dilation 2",
       ct2d({1, 2}, {1, 0}, {0, 1}, 2, 2),
       {randn({1, 4, 3, 2}), randn({4, 1, 2, 3})}},
      {"conv_transpose2d stride 3 unbatched", ct2d(3, 0, 2, 1, 1), {randn({2, 2, 2}), randn({2, 3, 2, 2}), randn({3})}},
      {"conv_transpose1d",
       [](const TensorList& t) { return kiln::conv_transpose1d(t[0], t[1], t[2], 2, 1, 1, 2, 1); },
       {randn({2, 4, 3}), randn({4, 1, 3}), randn({2})}},
      {"conv1d",
       [](const TensorList& t) { return kiln::conv1d(t[0], t[1], t[2], 2, 1, 2); },
       {randn({2, 3, 7}), randn({2, 3, 3}), randn({2})}},
      {"pad reflect and circular",
       [](const TensorList& t) {
         return kiln::pad(t[0], {2, 1, 1, 2}, "reflect") + kiln::pad(t[0], {2, 1, 1, 2}, "circular") +
                kiln::pad(t[0], {2, 1, 1, 2}, "replicate");
       },
       {randn({2, 3, 4})}},
      {"max_pool1d", [](const TensorList& t) { return kiln::max_pool1d(t[0], 3, 2, 1, 1, true); }, {randn({2, 2, 7})}},
      {"avg_pool1d",
       [](const TensorList& t) { return kiln::avg_pool1d(t[0], 3, 2, 1, true, false); },
       {randn({2, 2, 7})}},
      {"adaptive_avg_pool2d",
       [](const TensorList& t) {
         return kiln::adaptive_avg_pool2d(t[0], {3, 2});
       },
       {randn({2, 2, 5, 7})}},
      {"adaptive_max_pool2d",
       [](const TensorList& t) {
         return std::get<0>(kiln::adaptive_max_pool2d(t[0], {3, 4}));
       },
       {randn({1, 2, 5, 7})}},
      {"adaptive_max_pool1d",
       [](const TensorList& t) { return std::get<0>(kiln::adaptive_max_pool1d(t[0], 3)); },
       {randn({2, 2, 8})}},
      {"interpolate nearest",
       [](const TensorList& t) {
         return F::interpolate(t[0], IO().scale_factor(std::vector<double>{1.7, 2.5}));
       },
       {randn({1, 2, 3, 4})}},
      {"interpolate bilinear",
       [](const TensorList& t) {
         return F::interpolate(t[0], IO().size(std::vector<int64_t>{5, 3}).mode(kiln::kBilinear));
       },
       {randn({2, 1, 3, 4})}},
      {"interpolate bilinear align_corners",
       [](const TensorList& t) {
         return F::interpolate(t[0], IO().size(std::vector<int64_t>{5, 7}).mode(kiln::kBilinear).align_corners(true));
       },
       {randn({1, 2, 3, 4})}},
      {"interpolate linear",
       [](const TensorList& t) {
         return F::interpolate(t[0], IO().scale_factor(std::vector<double>{2.3}).mode(kiln::kLinear));
       },
       {randn({1, 2, 5})}},
      {"dropout2d",
       [](const TensorList& t) {
         kiln::manual_seed(7);  // the same channels each call
         return F::dropout2d(t[0], F::Dropout2dFuncOptions().p(0.5));
       },
       {randn({4, 3, 2, 2})}},
  };
  gradcheck::Options o;
  o.gradgrad = false;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(gradcheck::check(c.f, c.inputs, o)) << c.name;
  }
}

TEST_F(ConvModules, BadInputsNameTheOpAndShapes) {
  Tensor x = kiln::randn({2, 4, 3, 3}), w = kiln::randn({4, 3, 3, 3});
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x[0][0], w),
                    "conv_transpose2d: expected a 3D (unbatched) or 4D (batched) "
                    "input, got [3, 3]");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x, w[0]), "conv_transpose2d: expected a 4D weight");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(kiln::randn({2, 5, 3, 3}), w),
                    "conv_transpose2d: given groups=1, weight [4, 3, 3, 3] float32 expects input with 4 channels");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x, w, {}, 2, 0, 2),
                    "conv_transpose2d: output padding must be smaller "
                    "than either stride or dilation, got output_padding (2, 2), stride (2, 2), dilation (1, 1)");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x, w, {}, 1, 3),
                    "conv_transpose2d: given input [2, 4, 3, 3] float32 and weight "
                    "[4, 3, 3, 3] float32, the calculated output size per channel (-1 x -1) is too small");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x, w, kiln::randn({4})), "conv_transpose2d: expected bias of shape [3]");
  EXPECT_THROW_WITH(kiln::conv_transpose2d(x, w, {}, 1, 0, 0, 3), "conv_transpose2d: given groups=3");
  EXPECT_THROW_WITH(kiln::conv_transpose1d(x, w), "conv_transpose1d: expected a 3D weight");
  EXPECT_THROW_WITH(kiln::conv_transpose1d(x, w[0]),
                    "conv_transpose1d: expected a 2D (unbatched) or 3D (batched) "
                    "input, got [2, 4, 3, 3]");
  EXPECT_THROW_WITH(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 2).groups(2)),
                    "ConvTranspose2d: in_channels (3) and out_channels (4) must be divisible by groups (2)");
  EXPECT_THROW_WITH(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 4, 2).padding_mode(kiln::kReflect)),
                    "ConvTranspose2d: only \"zeros\" padding mode");

  Tensor x1 = kiln::randn({2, 4, 5});
  EXPECT_THROW_WITH(
      kiln::conv1d(x1, kiln::randn({3, 4, 7})),
      "conv1d: calculated padded input size per channel: (5)."
      " Kernel size: (7). Kernel size can't be greater than actual input size (input [2, 4, 5] float32, weight "
      "[3, 4, 7] float32)");
  EXPECT_THROW_WITH(kiln::conv1d(x1, kiln::randn({3, 2, 3})),
                    "conv1d: given groups=1, weight [3, 2, 3] float32 expects "
                    "input with 2 channels");
  EXPECT_THROW_WITH(kiln::conv1d(x, kiln::randn({3, 4, 3})),
                    "conv1d: expected a 2D (unbatched) or 3D (batched) "
                    "input, got [2, 4, 3, 3]");
  EXPECT_THROW_WITH(kiln::pad(x1, {5, 0}, "reflect"),
                    "pad: reflect padding (5, 0) of dimension 2 must be less than "
                    "its size in input [2, 4, 5]");
  EXPECT_THROW_WITH(kiln::pad(x1, {6, 0}, "circular"), "pad: circular padding (6, 0)");
  EXPECT_THROW_WITH(kiln::pad(x1, {1, 1}, "mirror"), "pad: unknown padding mode \"mirror\"");

  EXPECT_THROW_WITH(kiln::max_pool1d(x, 2),
                    "max_pool1d: expected a 2D or 3D input (C, L or N, C, L), got [2, 4, 3, 3]");
  EXPECT_THROW_WITH(kiln::max_pool1d(x1, 2, 1, 2),
                    "max_pool1d: pad should be at most half of kernel size, but got "
                    "pad 2 and kernel_size 2");
  EXPECT_THROW_WITH(kiln::max_pool1d(x1, 7),
                    "max_pool1d: given input [2, 4, 5] float32 with kernel_size 7, padding 0 and "
                    "dilation 1, the output size (0) is too small");
  EXPECT_THROW_WITH(kiln::avg_pool1d(x1, {2, 2}), "avg_pool1d: kernel_size must be one int, got [2, 2]");
  EXPECT_THROW_WITH(kiln::adaptive_avg_pool2d(x1[0], {2, 2}),
                    "adaptive_avg_pool2d: expected a 3D or 4D input, got [4, 5]");
  EXPECT_THROW_WITH(kiln::adaptive_max_pool2d(x, {2}),
                    "adaptive_max_pool2d: output_size must have 2 elements, got [2]");
  EXPECT_THROW_WITH(kiln::adaptive_max_pool1d(x1, {0}), "adaptive_max_pool1d: output_size must be positive, got [0]");

  EXPECT_THROW_WITH(F::dropout2d(x1[0]),
                    "dropout2d: expected a 3D or 4D input (with an optional batch dimension), "
                    "got [4, 5]");
  EXPECT_THROW_WITH(F::dropout2d(x, F::Dropout2dFuncOptions().p(1.5)),
                    "dropout2d: dropout probability has to be "
                    "between 0 and 1, but got 1.5");
  EXPECT_THROW_WITH(nn::Dropout2d(-0.1), "Dropout2d: dropout probability has to be between 0 and 1");

  using IO = F::InterpolateFuncOptions;
  EXPECT_THROW_WITH(F::interpolate(x), "interpolate: either size or scale_factor should be defined");
  EXPECT_THROW_WITH(F::interpolate(x, IO().size(std::vector<int64_t>{2, 2}).scale_factor(std::vector<double>{2, 2})),
                    "interpolate: only one of size or scale_factor should be defined");
  EXPECT_THROW_WITH(F::interpolate(x, IO().scale_factor(std::vector<double>{2})),
                    "interpolate: scale_factor shape "
                    "must match input shape. Input is 2D, scale_factor size is 1");
  EXPECT_THROW_WITH(F::interpolate(x, IO().size(std::vector<int64_t>{4, 4}).align_corners(true)),
                    "interpolate: "
                    "align_corners option can only be set with the interpolating modes");
  EXPECT_THROW_WITH(F::interpolate(x1, IO().size(std::vector<int64_t>{4}).mode(kiln::kBilinear)),
                    "interpolate: got "
                    "3D input [2, 4, 5] float32, but bilinear mode needs 4D input");
  EXPECT_THROW_WITH(F::interpolate(x, IO().size(std::vector<int64_t>{4, 4}).mode(kiln::kLinear)),
                    "interpolate: got "
                    "4D input [2, 4, 3, 3] float32, but linear mode needs 3D input");
  EXPECT_THROW_WITH(F::interpolate(x1, IO().size(std::vector<int64_t>{4}).mode(kiln::kBicubic)),
                    "interpolate: got "
                    "3D input [2, 4, 5] float32, but bicubic mode needs 4D input");
  EXPECT_THROW_WITH(F::interpolate(x, IO().size(std::vector<int64_t>{0, 4})),
                    "upsample_nearest2d: input [2, 4, 3, 3] float32 "
                    "and output size [0, 4] should be greater than 0");
}

}  // namespace
