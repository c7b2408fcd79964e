// The margin losses of losses_more.h, as libtorch 1.13 computes them, from kiln's ops.
#include "frontend/nn/losses_more.h"

#include "frontend/nn/loss_reduction.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using kiln::detail::shape_str;

namespace {

// input [C] as [1, C], a 0-d input as [1, 1]; [N, C] as it is.
Tensor as_rows(const Tensor& t) { return t.dim() == 2 ? t : t.reshape({1, -1}); }
}  // namespace

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options) {
  const char* op = "multilabel_margin_loss";
  KILN_CHECK(input.dim() <= 2 && input.is_floating_point(), op,
             ": expected a floating point input of 0, 1 or 2 "
             "dimensions, got ",
             shape_str(input));
  KILN_CHECK(target.sizes() == input.sizes() && target.dtype() == kLong, op, ": inconsistent target ",
             shape_str(target), " of ", target.dtype(), " for input ", shape_str(input),
             " (expected int64 of the same shape)");
  const Tensor x = as_rows(input);
  const int64_t n = x.size(0), c = x.size(1);
  // How often each class is a listed target, and whether it is one, per sample.
  const std::vector<int64_t> t = target.reshape({-1}).to_vector<int64_t>();
  std::vector<double> listed(size_t(n * c), 0.0), is_target(size_t(n * c), 0.0);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t cls = t[size_t(s * c + j)];
      if (cls < 0) break;
      KILN_CHECK(cls < c, op, ": target class ", cls, " is out of range for input ", shape_str(input));
      listed[size_t(s * c + cls)] += 1;
      is_target[size_t(s * c + cls)] = 1;
    }
  const Tensor listed_t = tensor(listed, x.dtype()).view({n, c, 1});
  const Tensor others = (1 - tensor(is_target, x.dtype())).view({n, 1, c});
  // [N, target j, other i]
  const Tensor hinge = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0) * listed_t * others;
  Tensor loss = hinge.sum({1, 2}) / double(c);
  if (input.dim() < 2) loss = loss.reshape({});
  return reduce_loss(loss, options.reduction(), op);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options) {
  const char* op = "multilabel_soft_margin_loss";
  KILN_CHECK(input.dim() >= 1 && target.sizes() == input.sizes(), op, ": expected target of the input's shape ",
             shape_str(input), ", got ", shape_str(target));
  Tensor loss = -(target * kiln::log_sigmoid(input) + (1 - target) * kiln::log_sigmoid(-input));
  if (options.weight().defined()) loss = loss * options.weight();
  loss = loss.sum({-1}) / double(input.size(-1));
  return reduce_loss(loss, options.reduction(), op);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options) {
  const char* op = "multi_margin_loss";
  KILN_CHECK(options.p() == 1 || options.p() == 2, op, ": only p == 1 and p == 2 supported, got p = ", options.p());
  KILN_CHECK(input.dim() <= 2 && input.is_floating_point(), op,
             ": expected a floating point input of 0, 1 or 2 "
             "dimensions, got ",
             shape_str(input));
  const Tensor x = as_rows(input);
  const int64_t n = x.size(0), c = x.size(1);
  KILN_CHECK(target.dtype() == kLong && target.dim() <= 1 && target.numel() == n, op, ": inconsistent target ",
             shape_str(target), " for input ", shape_str(input), " (expected ", n, " int64 class indices)");
  const Tensor& weight = options.weight();
  KILN_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == c), op, ": expected weight of shape [", c,
             "] for input ", shape_str(input), ", got ", shape_str(weight));
  const Tensor y = target.reshape({n, 1});
  Tensor margins = (options.margin() - x.gather(1, y) + x).clamp_min(0);
  if (options.p() == 2) margins = margins * margins;
  if (weight.defined()) margins = margins * weight.index_select(0, target.reshape({-1})).reshape({n, 1});
  const Tensor own_class = arange(c).reshape({1, c}) == y;
  Tensor loss = where(own_class, 0.0, margins).sum({1}) / double(c);
  if (input.dim() < 2) loss = loss.reshape({});
  return reduce_loss(loss, options.reduction(), op);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options) {
  const char* op = "cosine_embedding_loss";
  KILN_CHECK(input1.sizes() == input2.sizes() && input1.dim() >= 1 && input1.dim() <= 2 &&
                 target.dim() == input1.dim() - 1 && (target.dim() == 0 || target.size(0) == input1.size(0)),
             op, ": expected input1 and input2 of one shape [N, D] or [D] and target [N] or [], got input1 ",
             shape_str(input1), ", input2 ", shape_str(input2), " and target ", shape_str(target));
  constexpr double kEpsilon = 1e-12;
  const Tensor dot = (input1 * input2).sum({-1});
  const Tensor mag1 = (input1 * input1).sum({-1}) + kEpsilon, mag2 = (input2 * input2).sum({-1}) + kEpsilon;
  const Tensor cos = dot / (mag1 * mag2).sqrt();
  const Tensor zeros = zeros_like(cos);
  const Tensor loss =
      where(target == 1, 1 - cos, zeros) + where(target == -1, (cos - options.margin()).clamp_min(0), zeros);
  return reduce_loss(loss, options.reduction(), op);
}

}  // namespace kiln::nn::functional
