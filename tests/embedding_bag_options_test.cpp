// embedding_bag's max_norm and scale_grad_by_freq against libtorch 1.13 (a libtorch program printed
// the numbers below). scale_grad_by_freq follows the documented rule, each row's gradient divided
// by its frequency in the input: libtorch 1.13's CPU embedding_bag kernel reads the count of the
// wrong row where rows repeat, so the reference gradients come from libtorch's embedding (whose
// scale_grad_by_freq is right) summed and averaged per bag.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"

namespace {

namespace F = torch::nn::functional;
using torch::Tensor;

void expect_near(const Tensor& got, const std::vector<double>& want, double tolerance = 1e-12) {
  const std::vector<double> g = got.to(torch::kDouble).contiguous().to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tolerance) << i;
}

struct Bag {
  Tensor out, weight;
};
Bag run_bag(F::EmbeddingBagFuncOptions options) {
  Tensor weight = (torch::arange(0, 15, torch::kDouble).reshape({5, 3}) * 0.5 - 3).requires_grad_(true);
  Tensor out = F::embedding_bag(torch::tensor({0, 2, 2, 4, 1, 2, 0}, torch::kLong), weight,
                                options.offsets(torch::tensor({0, 3, 5}, torch::kLong)));
  (out * (torch::arange(0, 9, torch::kDouble).reshape({3, 3}) + 1)).sum().backward();
  return {out, weight};
}

TEST(EmbeddingBagOptions, MaxNormRenormalizesTheRowsInPlaceAsLibtorch) {
  const std::vector<double> renormed = {
      -1.7094086079335309, -1.4245071732779424, -1.1396057386223539, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5,
      1.2288478606443329,  1.4336558374183883,  1.6384638141924439};
  Bag sum = run_bag(F::EmbeddingBagFuncOptions().mode(torch::kSum).max_norm(2.5));
  expect_near(sum.out, {-1.7094086079335309, -0.42450717327794241, 0.86039426137764607, -0.27115213935566707,
                        0.43365583741838831, 1.1384638141924439, -1.7094086079335309, -0.92450717327794241,
                        -0.13960573862235393});
  expect_near(sum.weight.detach(), renormed);
  EXPECT_EQ(sum.weight._version(), 1);
  expect_near(sum.weight.grad(), {8, 10, 12, 4, 5, 6, 9, 12, 15, 0, 0, 0, 4, 5, 6});
  Bag mean = run_bag(F::EmbeddingBagFuncOptions().mode(torch::kMean).max_norm(2.5));
  expect_near(mean.out, {-0.56980286931117696, -0.14150239109264748, 0.28679808712588201, -0.13557606967783353,
                         0.21682791870919416, 0.56923190709622196, -0.85470430396676544, -0.4622535866389712,
                         -0.069802869311176963});
  expect_near(mean.weight.detach(), renormed);
  expect_near(mean.weight.grad(), {3.8333333333333335, 4.666666666666667, 5.5, 2, 2.5, 3, 4.166666666666667,
                                   5.333333333333333, 6.5, 0, 0, 0, 2, 2.5, 3});
  Bag max = run_bag(F::EmbeddingBagFuncOptions().mode(torch::kMax).max_norm(2.5));
  expect_near(max.out, {0, 0.5, 1, 1.2288478606443329, 1.4336558374183883, 1.6384638141924439, 0, 0.5, 1});
  expect_near(max.weight.grad(), {0, 0, 0, 0, 0, 0, 8, 10, 12, 0, 0, 0, 4, 5, 6});
  // The 1-norm, with scale_grad_by_freq.
  Bag l1 =
      run_bag(F::EmbeddingBagFuncOptions().mode(torch::kSum).max_norm(3.0).norm_type(1.0).scale_grad_by_freq(true));
  expect_near(l1.out, {-1.1999999840000002, 1.333333310427065e-08, 1.2000000106666664, -0.64285715102040797,
                       -9.523809296752006e-09, 0.64285713197278938, -1.1999999840000002, -0.4999999866666669,
                       0.20000001066666651});
  expect_near(l1.weight.detach(), {-1.1999999840000002, -0.9999999866666669, -0.79999998933333349, -1.5, -1, -0.5, 0,
                                   0.5, 1, 1.5, 2, 2.5, 0.85714284897959203, 0.9999999904761907, 1.1428571319727894});
  expect_near(l1.weight.grad(), {4, 5, 6, 4, 5, 6, 3, 4, 5, 0, 0, 0, 4, 5, 6});
  // The module passes its options on (float32).
  torch::nn::EmbeddingBag bag(torch::nn::EmbeddingBagOptions(5, 3).max_norm(1.0).mode(torch::kSum));
  {
    torch::NoGradGuard no_grad;
    bag->weight.copy_(torch::arange(0, 15, torch::kFloat).reshape({5, 3}) * 0.5 - 3);
  }
  expect_near(
      bag(torch::tensor({0, 2, 2, 4, 1, 2, 0}, torch::kLong), torch::tensor({0, 3, 5}, torch::kLong)),
      {-0.68376344442367554, 0.32462424039840698, 1.3330119848251343, -0.31024444103240967, 0.038939952850341797,
       0.38812434673309326, -0.68376344442367554, -0.12258931994438171, 0.4385848343372345},
      1e-6);
  expect_near(bag->weight.detach(),
              {-0.68376344442367554, -0.56980288028717041, -0.4558422863483429, -0.80178362131118774,
               -0.5345224142074585, -0.26726120710372925, 0, 0.4472135603427887, 0.89442712068557739, 1.5, 2, 2.5,
               0.49153918027877808, 0.57346236705780029, 0.65538555383682251},
              1e-6);
}

TEST(EmbeddingBagOptions, ScaleGradByFreqDividesByEachRowsFrequency) {
  Bag sum = run_bag(F::EmbeddingBagFuncOptions().mode(torch::kSum).scale_grad_by_freq(true));
  expect_near(sum.out, {-3, -1.5, 0, 1.5, 2.5, 3.5, -3, -2, -1});  // the values are unchanged
  expect_near(sum.weight.grad(), {4, 5, 6, 4, 5, 6, 3, 4, 5, 0, 0, 0, 4, 5, 6});
  Bag mean = run_bag(F::EmbeddingBagFuncOptions().mode(torch::kMean).scale_grad_by_freq(true));
  expect_near(mean.out, {-1, -0.5, 0, 0.75, 1.25, 1.75, -1.5, -1, -0.5});
  expect_near(mean.weight.grad(), {1.9166666666666667, 2.3333333333333335, 2.75, 2, 2.5, 3, 1.3888888888888888,
                                   1.7777777777777777, 2.1666666666666665, 0, 0, 0, 2, 2.5, 3});
  // per_sample_weights' own gradient is not scaled.
  Tensor psw = torch::ones({7}, torch::kDouble).requires_grad_(true);
  Tensor w = torch::ones({5, 3}, torch::kDouble).requires_grad_(true);
  F::embedding_bag(torch::tensor({0, 2, 2, 4, 1, 2, 0}, torch::kLong), w,
                   F::EmbeddingBagFuncOptions()
                       .offsets(torch::tensor({0, 3, 5}, torch::kLong))
                       .mode(torch::kSum)
                       .per_sample_weights(psw)
                       .scale_grad_by_freq(true))
      .sum()
      .backward();
  expect_near(psw.grad(), std::vector<double>(7, 3.0));
}

TEST(EmbeddingBagOptions, BadOptionsThrow) {
  Tensor w = torch::ones({5, 3});
  Tensor idx = torch::tensor({0, 1}, torch::kLong), off = torch::tensor({0}, torch::kLong);
  EXPECT_THROW_WITH(
      F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kMax).scale_grad_by_freq(true)),
      "embedding_bag: max mode does not support scaling the gradient by the frequency");
  EXPECT_THROW_WITH(F::embedding_bag(idx, w, F::EmbeddingBagFuncOptions().offsets(off).max_norm(-1.0)),
                    "embedding_bag: max_norm must be positive, got -1");
  EXPECT_THROW_WITH(
      F::embedding_bag(torch::tensor({0, 7}, torch::kLong), w, F::EmbeddingBagFuncOptions().offsets(off).max_norm(1.0)),
      "embedding_bag: index 7 is out of range for weight [5, 3] float32");
}

}  // namespace
