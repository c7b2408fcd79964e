// Losses: values against hand computation and against numbers printed by libtorch 1.13 for the
// same inputs, gradients against central differences, and the errors bad calls raise.
#include <cmath>
#include <functional>

#include "nn_test_util.h"

namespace F = kiln::nn::functional;
using kiln::Tensor;
using nn_test::doubles;
using nn_test::expect_error;
using nn_test::expect_gradient_matches;
using nn_test::expect_values;

namespace {

Tensor logits() {
  return kiln::tensor({1.0, -0.5, 2.0, 0.3, 0.0, -1.2, 0.7, 0.1, 0.9, -2.0, 1.5, 0.4}).reshape({3, 4});
}
Tensor classes() { return kiln::tensor({2, 0, 3}, kiln::kLong); }
Tensor classes_with_ignored() { return kiln::tensor({2, -100, 3}, kiln::kLong); }
Tensor probabilities() {
  return kiln::softmax(kiln::tensor({0.2, 0.1, -0.3, 0.5, 1.0, 0.0, 0.0, -1.0, 0.3, 0.3, 0.3, 0.3}).reshape({3, 4}), 1);
}
Tensor class_weights() { return kiln::tensor({0.5, 2.0, 1.0, 3.0}); }
Tensor regression_input() { return kiln::tensor({0.5, -1.5, 2.0, 0.1, 3.0, -0.2}); }
Tensor regression_target() { return kiln::tensor({0.0, 0.0, 1.0, 1.2, 0.5, -0.1}); }

}  // namespace

// --- values ---

TEST(LossValues, RegressionLossesByHand) {
  // Differences: 0.5, -1.5, 1, -1.1, 2.5, -0.1.
  const Tensor a = regression_input(), b = regression_target();
  expect_values(kiln::mse_loss(a, b), {10.97 / 6});
  expect_values(kiln::mse_loss(a, b, "sum"), {10.97});
  expect_values(kiln::mse_loss(a, b, "none"), {0.25, 2.25, 1, 1.21, 6.25, 0.01});
  expect_values(kiln::l1_loss(a, b), {6.7 / 6});
  expect_values(kiln::l1_loss(a, b, "none"), {0.5, 1.5, 1, 1.1, 2.5, 0.1});
  // beta = 1: quadratic 0.5 d^2 below 1, linear |d| - 0.5 from 1 on.
  expect_values(kiln::smooth_l1_loss(a, b), {(0.125 + 1.0 + 0.5 + 0.6 + 2.0 + 0.005) / 6});
  // beta = 0.5, from the options or (libtorch 1.13's way) as a trailing argument.
  const std::vector<double> half_beta = {0.25, 1.25, 0.75, 0.85, 2.25, 0.01};
  expect_values(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(0.5).reduction(kiln::kNone)), half_beta);
  expect_values(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions(kiln::kNone), 0.5), half_beta);
  expect_values(kiln::nn::SmoothL1Loss(kiln::nn::SmoothL1LossOptions().beta(0.5).reduction(kiln::kNone))(a, b),
                half_beta);
  // beta = 0 is the L1 loss.
  expect_values(kiln::smooth_l1_loss(a, b, "mean", 0.0), {6.7 / 6});
}

TEST(LossValues, CrossEntropyByHand) {
  // One row: logits [0, ln 3] with class 1 -> -log(3/4).
  Tensor x = kiln::tensor({0.0, std::log(3.0)}).reshape({1, 2});
  expect_values(kiln::cross_entropy(x, kiln::tensor({1}, kiln::kLong)), {-std::log(0.75)});
  expect_values(kiln::nll_loss(kiln::log_softmax(x, 1), kiln::tensor({0}, kiln::kLong)), {-std::log(0.25)});
  // Label smoothing 0.5 over 2 classes: the target becomes [0.25, 0.75].
  expect_values(kiln::cross_entropy(x, kiln::tensor({1}, kiln::kLong), "mean", 0.5),
                {-(0.25 * std::log(0.25) + 0.75 * std::log(0.75))});
}

TEST(LossValues, CrossEntropyMatchesLibtorch) {
  const Tensor x = logits(), y = classes(), yi = classes_with_ignored();
  expect_values(F::cross_entropy(x, y), {1.24148548});
  expect_values(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().reduction(kiln::kSum)), {3.72445655});
  expect_values(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().reduction(kiln::kNone)),
                {0.490203232, 1.48616636, 1.74808717});
  expect_values(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().label_smoothing(0.1)), {1.29481876});
  expect_values(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().label_smoothing(0.2).reduction(kiln::kNone)),
                {0.750203252, 1.50616646, 1.78808725});
  expect_values(F::cross_entropy(x, probabilities()), {1.81822395});
  expect_values(
      F::cross_entropy(x, probabilities(), F::CrossEntropyFuncOptions().label_smoothing(0.1).reduction(kiln::kSum)),
      {5.44164991});
  expect_values(F::cross_entropy(x, probabilities(), F::CrossEntropyFuncOptions().reduction(kiln::kNone)),
                {1.92934513, 1.57723963, 1.94808722});
  expect_values(F::cross_entropy(x, yi), {1.11914515});
  expect_values(F::cross_entropy(x, yi, F::CrossEntropyFuncOptions().label_smoothing(0.3)), {1.34414518});
  expect_values(F::cross_entropy(x, yi, F::CrossEntropyFuncOptions().reduction(kiln::kNone)),
                {0.490203232, 0, 1.74808717});
  // A single sample: input [C], target a scalar.
  expect_values(F::cross_entropy(x[0], kiln::tensor(int64_t(1))), {2.99020314});
  // Module form, and the plain kiln form with a string reduction.
  expect_values(kiln::nn::CrossEntropyLoss()(x, y), {1.24148548});
  expect_values(kiln::cross_entropy(x, y, "sum"), {3.72445655});
}

TEST(LossValues, WeightedAndMultiDimCrossEntropyMatchesLibtorch) {
  const Tensor x = logits(), y = classes(), w = class_weights();
  expect_values(F::cross_entropy(x, y, F::CrossEntropyFuncOptions().weight(w)), {1.43945515});
  expect_values(
      F::cross_entropy(x, classes_with_ignored(), F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2)),
      {1.50437915});
  expect_values(
      F::cross_entropy(x, y, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2).reduction(kiln::kNone)),
      {1.0814786, 1.14747071, 4.93603754});
  expect_values(
      F::cross_entropy(x, y, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2).reduction(kiln::kSum)),
      {7.16498709});
  expect_values(F::cross_entropy(x, probabilities(), F::CrossEntropyFuncOptions().weight(w)), {3.19345164});
  // [N, C, d] input with [N, d] targets.
  Tensor x3 = logits().reshape({2, 3, 2});
  Tensor y3 = kiln::tensor({2, 0, 1, 2}, kiln::kLong).reshape({2, 2});
  expect_values(F::cross_entropy(x3, y3), {1.4048183});
  expect_values(F::cross_entropy(x3, y3, F::CrossEntropyFuncOptions().label_smoothing(0.1).reduction(kiln::kNone)),
                {2.30760598, 1.31096172, 1.2788837, 0.695155025});
}

TEST(LossValues, NllLossMatchesLibtorch) {
  const Tensor lp = kiln::log_softmax(logits(), 1);
  expect_values(F::nll_loss(lp, classes()), {1.24148548});
  expect_values(F::nll_loss(lp, classes_with_ignored(), F::NLLLossFuncOptions().reduction(kiln::kSum)), {2.23829031});
  expect_values(F::nll_loss(lp, classes_with_ignored(), F::NLLLossFuncOptions().weight(class_weights())), {1.43361628});
  expect_values(F::nll_loss(lp, classes(), F::NLLLossFuncOptions().ignore_index(0)), {1.11914515});
  expect_values(kiln::nn::NLLLoss(kiln::kSum)(lp, classes()), {3.72445655});
}

// A mean over no targets, as libtorch 1.13 (checked against it): every target ignored gives a NaN
// loss and a zero gradient (ignored targets have none), targets whose class weights are all zero
// a NaN loss and NaN gradients (their weight times 1 / 0).
TEST(LossValues, MeanOverNoTargetsIsNaN) {
  const Tensor all_ignored = kiln::tensor({-100, -100, -100}, kiln::kLong);
  auto gradient_of = [](const std::function<Tensor(const Tensor&)>& loss_of, const char* what) {
    Tensor x = logits().requires_grad_();
    Tensor loss = loss_of(x);
    loss.backward();
    EXPECT_TRUE(std::isnan(loss.item<double>())) << what;
    return x.grad().to(kiln::kDouble).to_vector<double>();
  };
  auto expect_zero_gradient = [&](const std::function<Tensor(const Tensor&)>& loss_of, const char* what) {
    for (double g : gradient_of(loss_of, what)) EXPECT_EQ(g, 0.0) << what;
  };
  expect_zero_gradient([&](const Tensor& x) { return F::cross_entropy(x, all_ignored); }, "cross_entropy");
  expect_zero_gradient(
      [&](const Tensor& x) {
        return F::cross_entropy(x, all_ignored,
                                F::CrossEntropyFuncOptions().weight(class_weights()).label_smoothing(0.2));
      },
      "cross_entropy, weighted and smoothed");
  expect_zero_gradient([&](const Tensor& x) { return F::nll_loss(kiln::log_softmax(x, 1), all_ignored); }, "nll_loss");
  for (double g : gradient_of(
           [&](const Tensor& x) {
             return F::cross_entropy(x, classes(),
                                     F::CrossEntropyFuncOptions().weight(kiln::tensor({0.0, 1.0, 0.0, 0.0})));
           },
           "every target's class weighted zero"))
    EXPECT_TRUE(std::isnan(g));
  // Some targets left: the mean over them, as before.
  expect_values(F::nll_loss(kiln::log_softmax(logits(), 1), classes_with_ignored(),
                            F::NLLLossFuncOptions().weight(class_weights())),
                {1.43361628});
}

TEST(LossValues, BinaryCrossEntropyMatchesLibtorch) {
  Tensor p = kiln::tensor({0.9, 0.2, 0.5, 0.01, 0.7, 0.999});
  Tensor t = kiln::tensor({1.0, 0.0, 1.0, 0.0, 0.3, 1.0});
  expect_values(F::binary_cross_entropy(p, t), {0.330414265});
  expect_values(kiln::binary_cross_entropy(p, t, {}, "sum"), {0.330414265 * 6}, 1e-5);
  expect_values(F::binary_cross_entropy(p, t,
                                        F::BinaryCrossEntropyFuncOptions()
                                            .weight(kiln::tensor({1.0, 2.0, 0.5, 1.0, 3.0, 1.0}))
                                            .reduction(kiln::kSum)),
                {3.75862241});
  // log is clamped at -100, as in libtorch: confident wrong answers cost 100, not infinity.
  expect_values(F::binary_cross_entropy(kiln::tensor({0.0, 1.0, 0.5}), kiln::tensor({1.0, 0.0, 0.5}),
                                        F::BinaryCrossEntropyFuncOptions().reduction(kiln::kNone)),
                {100, 100, 0.693147182});
  expect_values(kiln::nn::BCELoss()(p, t), {0.330414265});
}

TEST(LossValues, ModulesAndReductionTags) {
  const Tensor a = regression_input(), b = regression_target();
  expect_values(kiln::nn::MSELoss()(a, b), {10.97 / 6});
  expect_values(kiln::nn::MSELoss(kiln::kSum)(a, b), {10.97});
  expect_values(kiln::nn::MSELoss(kiln::nn::MSELossOptions().reduction("none"))(a, b),
                {0.25, 2.25, 1, 1.21, 6.25, 0.01});
  expect_values(kiln::nn::L1Loss(kiln::kSum)(a, b), {6.7});
  expect_values(kiln::nn::SmoothL1Loss()(a, b), {4.23 / 6});
  expect_values(F::mse_loss(a, b, kiln::kSum), {10.97});
}

// --- gradients, float64, against central differences ---

TEST(LossGradients, Regression) {
  const Tensor a = regression_input(), b = regression_target().to(kiln::kDouble);
  expect_gradient_matches([&](const Tensor& x) { return kiln::mse_loss(x, b); }, a);
  expect_gradient_matches([&](const Tensor& x) { return kiln::l1_loss(x, b, "sum"); }, a);
  expect_gradient_matches([&](const Tensor& x) { return kiln::smooth_l1_loss(x, b, "mean", 0.8); }, a);
  // The target's gradient too.
  const Tensor ad = a.to(kiln::kDouble);
  expect_gradient_matches([&](const Tensor& t) { return kiln::mse_loss(ad, t, "sum"); }, b);
}

TEST(LossGradients, CrossEntropyAndNll) {
  const Tensor x = logits(), y = classes(), yi = classes_with_ignored();
  const Tensor w = class_weights().to(kiln::kDouble), p = probabilities().to(kiln::kDouble);
  expect_gradient_matches([&](const Tensor& z) { return kiln::cross_entropy(z, y); }, x);
  expect_gradient_matches([&](const Tensor& z) { return kiln::cross_entropy(z, y, "sum", 0.15); }, x);
  expect_gradient_matches(
      [&](const Tensor& z) {
        return F::cross_entropy(z, yi, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.2));
      },
      x);
  expect_gradient_matches([&](const Tensor& z) { return kiln::cross_entropy(z, p, "mean", 0.1); }, x);
  // The gradient with respect to probability targets.
  const Tensor xd = x.to(kiln::kDouble);
  expect_gradient_matches([&](const Tensor& t) { return kiln::cross_entropy(xd, t); }, p);
  expect_gradient_matches([&](const Tensor& z) { return F::nll_loss(z, yi, F::NLLLossFuncOptions().weight(w)); },
                          kiln::log_softmax(x, 1));
}

TEST(LossGradients, BinaryCrossEntropy) {
  const Tensor t = kiln::tensor({1.0, 0.0, 1.0, 0.0, 0.3, 1.0}, kiln::kDouble);
  expect_gradient_matches([&](const Tensor& p) { return kiln::binary_cross_entropy(p, t); },
                          kiln::tensor({0.9, 0.2, 0.5, 0.1, 0.7, 0.95}), 1e-7, 1e-5);
  // Exactly 0 or 1 clamps the loss, and the gradient stays finite.
  Tensor edge = doubles({0.0, 1.0}, {2}).requires_grad_(true);
  kiln::binary_cross_entropy(edge, doubles({1.0, 0.0}, {2})).backward();
  for (double g : edge.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
}

// --- bad calls ---

TEST(LossErrors, ReductionMustBeKnown) {
  const Tensor a = regression_input(), b = regression_target();
  expect_error([&] { kiln::mse_loss(a, b, "avg"); }, {"mse_loss", "'avg'"});
  expect_error([&] { kiln::l1_loss(a, b, "max"); }, {"l1_loss", "reduction"});
  expect_error([&] { kiln::smooth_l1_loss(a, b, "Mean"); }, {"smooth_l1_loss"});
  expect_error([&] { kiln::cross_entropy(logits(), classes(), "batchmean"); }, {"cross_entropy"});
  expect_error([&] { kiln::nll_loss(logits(), classes(), {}, ""); }, {"nll_loss"});
  expect_error([&] { kiln::binary_cross_entropy(a.sigmoid(), a.sigmoid(), {}, "x"); }, {"binary_cross_entropy"});
  expect_error([&] { F::mse_loss(a, b, F::MSELossFuncOptions().reduction("avg")); }, {"mse_loss"});
}

TEST(LossErrors, ShapesAndDtypes) {
  const Tensor a = regression_input();
  expect_error([&] { kiln::mse_loss(a, kiln::zeros({4})); }, {"mse_loss", "[4]", "[6]"});
  expect_error([&] { kiln::mse_loss(a, kiln::zeros({6}, kiln::kLong)); }, {"mse_loss", "int64"});
  expect_error([&] { kiln::l1_loss(kiln::zeros({6}, kiln::kLong), a); }, {"l1_loss", "floating"});
  expect_error([&] { kiln::smooth_l1_loss(a, a, "mean", -1.0); }, {"smooth_l1_loss", "beta"});
  // Class targets: dtype, shape, values.
  expect_error(
      [&] {
        kiln::cross_entropy(logits(), kiln::tensor({2.0, 0.0, 3.0}));
      },
      {"cross_entropy", "int64", "[3]"});
  expect_error(
      [&] {
        kiln::cross_entropy(logits(), kiln::tensor({2, 0}, kiln::kLong));
      },
      {"cross_entropy", "[3]", "[3, 4]", "[2]"});
  expect_error(
      [&] {
        kiln::cross_entropy(logits(), kiln::tensor({2, 0, 4}, kiln::kLong));
      },
      {"cross_entropy", "target 4", "4 classes"});
  expect_error([&] { kiln::nll_loss(logits(), kiln::tensor({-1, 0, 1}, kiln::kLong)); }, {"nll_loss", "target -1"});
  // A target still pending is checked when it is computed, here by reading the loss; the same
  // program with classes in range runs afterwards.
  auto pending_target = [](int64_t last) { return kiln::tensor({int64_t(1), int64_t(0), last}, kiln::kLong) + 1; };
  expect_error([&] { kiln::cross_entropy(logits(), pending_target(3)).item<float>(); }, {"index 4", "out of bounds"});
  expect_error([&] { kiln::nll_loss(logits(), pending_target(-3)).item<float>(); }, {"index -2", "out of bounds"});
  EXPECT_TRUE(std::isfinite(kiln::cross_entropy(logits(), pending_target(2)).item<float>()));
  expect_error(
      [&] {
        kiln::nll_loss(kiln::tensor({1, 2}, kiln::kLong), kiln::tensor(int64_t(0)));
      },
      {"nll_loss", "floating"});
  expect_error([&] { kiln::cross_entropy(kiln::tensor(1.0), kiln::tensor(int64_t(0))); },
               {"cross_entropy", "at least 1 dimension"});
  expect_error([&] { kiln::cross_entropy(kiln::tensor(1.0), kiln::tensor(0.0)); }, {"cross_entropy", "[]"});
  expect_error([&] { kiln::cross_entropy(logits(), classes(), "mean", 1.5); }, {"cross_entropy", "label_smoothing"});
  // Probability targets must be floating.
  expect_error(
      [&] {
        kiln::cross_entropy(logits(), kiln::zeros({3, 4}, kiln::kLong));
      },
      {"cross_entropy", "floating point type for target"});
  expect_error([&] { F::cross_entropy(logits(), classes(), F::CrossEntropyFuncOptions().weight(kiln::ones({3}))); },
               {"cross_entropy", "weight", "[3]"});
  expect_error(
      [&] {
        kiln::binary_cross_entropy(kiln::rand({3, 1}), kiln::rand({3}));
      },
      {"binary_cross_entropy", "[3]", "[3, 1]"});
}

// --- logits losses, Huber, softplus (values printed by libtorch 1.13 for the same inputs) ---

namespace {
Tensor bce_logits() { return doubles({-3.0, -0.5, 0.0, 0.25, 2.0, 30.0}, {2, 3}); }
Tensor bce_targets() { return doubles({0.0, 1.0, 1.0, 0.3, 0.0, 1.0}, {2, 3}); }
}  // namespace

TEST(LossValues, BinaryCrossEntropyWithLogitsAsLibtorch) {
  const Tensor x = bce_logits(), t = bce_targets();
  const Tensor pos_weight = kiln::tensor({2.0, 0.5, 3.0}, kiln::kDouble),
               weight = kiln::tensor({1.0, 2.0, 0.5}, kiln::kDouble);
  expect_values(kiln::binary_cross_entropy_with_logits(x, t, {}, {}, kiln::Reduction::None),
                {0.0485873516, 0.974076984, 0.693147181, 0.75093942, 2.12692801, 9.34807787e-14}, 1e-8, 1e-12);
  expect_values(kiln::binary_cross_entropy_with_logits(x, t, weight, pos_weight), {1.2066604}, 1e-7);
  // The module and the functional form with libtorch's option names.
  auto loss = kiln::nn::BCEWithLogitsLoss(kiln::nn::BCEWithLogitsLossOptions().pos_weight(pos_weight).weight(weight));
  expect_values(loss(x, t), {1.2066604}, 1e-7);
  expect_values(
      F::binary_cross_entropy_with_logits(
          x, t,
          F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(pos_weight).weight(weight).reduction(kiln::kSum)),
      {1.2066604 * 6}, 1e-7);
  // The gradient at a logit of exactly 0 is sigmoid(0) - t scaled, not the one-sided slope.
  Tensor xr = x.clone().requires_grad_();
  kiln::binary_cross_entropy_with_logits(xr, t, weight, pos_weight, kiln::Reduction::Sum).backward();
  expect_values(xr.grad(), {0.0474258732, -0.622459331, -0.75, 0.130829451, 1.76159416, -1.4033219e-13}, 1e-8, 1e-12);
}

TEST(LossValues, HuberSoftplusAndLogSigmoidAsLibtorch) {
  const Tensor x = bce_logits(), t = bce_targets();
  expect_values(kiln::huber_loss(x, t, kiln::Reduction::None, 0.8), {2.08, 0.88, 0.48, 0.00125, 1.28, 22.88});
  expect_values(kiln::nn::HuberLoss(kiln::nn::HuberLossOptions().delta(0.8).reduction(kiln::kSum))(x, t),
                {2.08 + 0.88 + 0.48 + 0.00125 + 1.28 + 22.88});
  expect_values(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(5)),
                {0.00123784257, 0.156630844, 0.34657359, 0.487038492, 2.00907496, 30}, 1e-8, 1e-12);
  expect_values(kiln::nn::LogSigmoid()(x),
                {-3.04858735, -0.974076984, -0.693147181, -0.57593942, -0.126928011, -9.35762297e-14}, 1e-8, 1e-12);
  Tensor xs = x.clone().requires_grad_();
  kiln::softplus(xs).sum().backward();
  expect_values(xs.grad(), {0.0474258732, 0.377540669, 0.5, 0.562176501, 0.880797078, 1}, 1e-8);
}

TEST(LossValues, AtenReductionEnumAndNllWeight) {
  const Tensor lp = kiln::log_softmax(logits(), 1);
  // torch::Reduction::Sum is ATen's enum; the plain forms take ATen's argument order.
  const double sum = kiln::nll_loss(lp, classes(), {}, kiln::Reduction::Sum).item<double>();
  EXPECT_NEAR(sum, kiln::nll_loss(lp, classes(), {}, kiln::Reduction::None).sum().item<double>(), 1e-6);
  EXPECT_NEAR(kiln::nll_loss(lp, classes()).item<double>() * 3, sum, 1e-5);
  const Tensor weighted = kiln::nll_loss(lp, classes(), class_weights(), kiln::Reduction::Mean);
  const Tensor by_hand = kiln::nll_loss(lp, classes(), class_weights(), kiln::Reduction::Sum) / (1.0 + 0.5 + 3.0);
  EXPECT_NEAR(weighted.item<double>(), by_hand.item<double>(), 1e-6);
  EXPECT_NEAR(kiln::cross_entropy_loss(logits(), classes(), class_weights()).item<double>(), weighted.item<double>(),
              1e-6);
}

TEST(LossGradients, LogitsHuberAndSoftplus) {
  const Tensor t = bce_targets();
  const Tensor pos_weight = kiln::tensor({2.0, 0.5, 3.0}, kiln::kDouble),
               weight = kiln::tensor({1.0, 2.0, 0.5}, kiln::kDouble);
  const Tensor x = doubles({-3.0, -0.5, 0.1, 0.25, 2.0, 4.0}, {2, 3});
  expect_gradient_matches(
      [&](const Tensor& z) { return kiln::binary_cross_entropy_with_logits(z, t, weight, pos_weight); }, x);
  expect_gradient_matches([&](const Tensor& z) { return kiln::huber_loss(z, t, kiln::Reduction::Sum, 0.8); }, x);
  expect_gradient_matches([&](const Tensor& z) { return kiln::softplus(z, 2, 5).sum(); }, x);
  expect_gradient_matches([&](const Tensor& z) { return kiln::log_sigmoid(z).sum(); }, x);
}

TEST(LossErrors, LogitsAndHuber) {
  const Tensor x = bce_logits(), t = bce_targets();
  expect_error(
      [&] {
        kiln::binary_cross_entropy_with_logits(x, t.reshape({3, 2}));
      },
      {"binary_cross_entropy_with_logits", "[3, 2]", "[2, 3]"});
  expect_error([&] { kiln::binary_cross_entropy_with_logits(x, t, {}, kiln::ones({4}, kiln::kDouble)); },
               {"binary_cross_entropy_with_logits", "pos_weight", "[4]"});
  expect_error([&] { kiln::binary_cross_entropy_with_logits(x, t, {}, {}, "avg"); },
               {"binary_cross_entropy_with_logits", "'avg'"});
  expect_error([&] { kiln::huber_loss(x, t, kiln::Reduction::Mean, 0.0); }, {"huber_loss", "delta"});
  expect_error([&] { kiln::softplus(kiln::ones({2}, kiln::kLong)); }, {"softplus", "floating"});
  // Nothing broke: the same call with good inputs still works afterwards.
  expect_values(kiln::huber_loss(x, t, kiln::Reduction::None, 0.8), {2.08, 0.88, 0.48, 0.00125, 1.28, 22.88});
}
