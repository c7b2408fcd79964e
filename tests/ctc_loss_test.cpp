// ctc_loss and CTCLoss against libtorch 1.13 (ctc_loss_reference.h): every reduction, another
// blank with concatenated targets, an impossible alignment with and without zero_infinity, the
// unbatched form; gradients with respect to the logits under log_softmax (libtorch's own CTC
// backward differs from the derivative by exp(log_probs), which log_softmax's backward cancels);
// a float64 gradient check and bad inputs.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "ctc_loss_reference.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace {

namespace F = torch::nn::functional;
namespace ref = libtorch_reference;
using torch::Tensor;

Tensor logits() { return (torch::arange(90, torch::kDouble).mul(0.7).add(0.3).sin() * 2).view({6, 3, 5}); }

void expect_values(const Tensor& t, const std::vector<double>& values, double tol = 1e-8) {
  const std::vector<double> got = t.contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(values[i])) {
      EXPECT_EQ(got[i], values[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], values[i], tol) << "element " << i;
    }
  }
}

const Tensor kTargets = torch::tensor({{1, 2, 2}, {3, 1, 0}, {4, 0, 0}}, torch::kLong);
const Tensor kInputLengths = torch::tensor({6, 5, 4}, torch::kLong), kTargetLengths = torch::tensor({3, 2, 1});

TEST(CtcLoss, ValuesAndGradientsAsLibtorch) {
  struct Case {
    F::CTCLossFuncOptions options;
    const std::vector<double>& loss;
    const std::vector<double>& grad;
  };
  const Case cases[] = {{F::CTCLossFuncOptions().reduction(torch::kNone), ref::ctc_none, ref::ctc_grad_none},
                        {F::CTCLossFuncOptions().reduction(torch::kMean), ref::ctc_mean, ref::ctc_grad_mean},
                        {F::CTCLossFuncOptions().reduction(torch::kSum), ref::ctc_sum, ref::ctc_grad_sum}};
  for (const Case& c : cases) {
    Tensor x = logits().requires_grad_(true);
    Tensor loss = F::ctc_loss(x.log_softmax(2), kTargets, kInputLengths, kTargetLengths, c.options);
    expect_values(loss, c.loss);
    (loss * (torch::arange(loss.numel(), torch::kDouble).reshape(loss.sizes()) + 1)).sum().backward();
    expect_values(x.grad(), c.grad);
  }
  // blank 4, the targets concatenated.
  Tensor x = logits().requires_grad_(true);
  Tensor loss = F::ctc_loss(x.log_softmax(2), torch::tensor({1, 2, 2, 3, 1, 0}, torch::kLong), kInputLengths,
                            kTargetLengths, F::CTCLossFuncOptions().blank(4).reduction(torch::kSum));
  expect_values(loss, ref::ctc_blank4);
  loss.backward();
  expect_values(x.grad(), ref::ctc_grad_blank4);
  // The module, and the unbatched form.
  torch::nn::CTCLoss module(torch::nn::CTCLossOptions().reduction(torch::kSum));
  expect_values(module(logits().log_softmax(2), kTargets, kInputLengths, kTargetLengths), ref::ctc_sum);
  Tensor single = F::ctc_loss(logits().log_softmax(2).select(1, 0), torch::tensor({1, 2, 2}, torch::kLong),
                              torch::tensor({6}, torch::kLong), torch::tensor({3}, torch::kLong),
                              F::CTCLossFuncOptions().reduction(torch::kNone));
  EXPECT_EQ(single.dim(), 0);
  expect_values(single, ref::ctc_unbatched);
}

// {1, 1, 1} needs five frames (a blank between the repeats): with four the loss is infinite, and
// zero_infinity makes it 0 with no gradient.
TEST(CtcLoss, ImpossibleAlignmentsAreInfiniteOrZero) {
  const Tensor targets = torch::tensor({{1, 1, 1}, {2, 3, 0}}, torch::kLong);
  const Tensor input_lengths = torch::tensor({4, 6}, torch::kLong), target_lengths = torch::tensor({3, 2});
  Tensor x = logits().narrow(1, 0, 2).clone().requires_grad_(true);
  expect_values(F::ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths,
                            F::CTCLossFuncOptions().reduction(torch::kNone)),
                ref::ctc_inf);
  Tensor zeroed = F::ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths,
                              F::CTCLossFuncOptions().reduction(torch::kSum).zero_infinity(true));
  expect_values(zeroed, ref::ctc_zero_inf);
  zeroed.backward();
  expect_values(x.grad(), ref::ctc_grad_zero_inf);
}

TEST(CtcLoss, GradientInFloat64) {
  EXPECT_TRUE(gradcheck::check(
      [](const torch::TensorList& v) {
        return F::ctc_loss(v[0].log_softmax(2), torch::tensor({{1, 2}, {3, 0}}, torch::kLong),
                           torch::tensor({4, 3}, torch::kLong), torch::tensor({2, 1}, torch::kLong),
                           F::CTCLossFuncOptions().reduction(torch::kNone));
      },
      {gradcheck::leaf(logits().narrow(0, 0, 4).narrow(1, 0, 2).contiguous())},
      [] {
        gradcheck::Options o;
        o.gradgrad = false;
        return o;
      }()));
}

TEST(CtcLoss, BadInputsThrow) {
  const Tensor lp = logits().log_softmax(2);
  EXPECT_THROW_WITH(F::ctc_loss(lp, kTargets, torch::tensor({7, 5, 4}, torch::kLong), kTargetLengths),
                    "ctc_loss: Expected input_lengths to have value at most 6, but got value 7");
  EXPECT_THROW_WITH(F::ctc_loss(lp, kTargets, kInputLengths, torch::tensor({4, 2, 1}, torch::kLong)),
                    "ctc_loss: targets [3, 3] int64 are shorter than target_lengths say");
  EXPECT_THROW_WITH(F::ctc_loss(lp, kTargets, kInputLengths, kTargetLengths, F::CTCLossFuncOptions().blank(5)),
                    "ctc_loss: blank must be in label range");
  EXPECT_THROW_WITH(F::ctc_loss(lp, kTargets, kInputLengths.narrow(0, 0, 2), kTargetLengths),
                    "ctc_loss: input_lengths must be of size batch_size (3)");
  EXPECT_THROW_WITH(
      F::ctc_loss(lp, torch::tensor({{0, 1, 1}, {3, 1, 0}, {4, 0, 0}}, torch::kLong), kInputLengths, kTargetLengths),
      "ctc_loss: target 0 of sample 0 is not a class other than blank");
  EXPECT_THROW_WITH(F::ctc_loss(lp.to(torch::kLong), kTargets, kInputLengths, kTargetLengths),
                    "ctc_loss: expected log_probs [T, N, C] or [T, C] of a floating point dtype");
}

}  // namespace
