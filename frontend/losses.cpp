// Losses, written from kiln ops (log_softmax, gather, where, sum) so that autograd differentiates
// them like any composite. Every shape, dtype and option is checked here, at the call.
#include <iostream>
#include <limits>
#include <mutex>
#include <set>

#include "frontend/derivatives.h"
#include "frontend/moments.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

using detail::named;
using detail::shape_str;

namespace {

enum class Reduce { None, Mean, Sum };

Reduce parse_reduction(const Reduction& reduction, const char* op) {
  const std::string& r = reduction.name();
  if (r == "mean") return Reduce::Mean;
  if (r == "sum") return Reduce::Sum;
  KILN_CHECK(r == "none", op, ": reduction must be 'mean', 'sum' or 'none', got '", r, "'");
  return Reduce::None;
}

Tensor reduce(const Tensor& loss, Reduce r) {
  switch (r) {
    case Reduce::Mean: return loss.mean();
    case Reduce::Sum: return loss.sum();
    case Reduce::None: break;
  }
  return loss;
}

// libtorch warns (and goes on) where a program is probably wrong but valid; once per op here.
void warn_once(const char* op, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (warned.insert(op).second) std::cerr << "kiln warning: " << op << ": " << message << std::endl;
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  KILN_CHECK(t.defined(), op, ": ", what, " is undefined");
  KILN_CHECK(t.is_floating_point(), op, ": expected a floating point ", what, ", got ", shape_str(t));
}

// Regression losses take input and target of one shape; a broadcast between different shapes is
// allowed, as in libtorch, but warned about since it is usually a bug ([N, 1] against [N]).
void check_pointwise(const Tensor& input, const Tensor& target, const char* op) {
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  if (input.sizes() == target.sizes()) return;
  const size_t rank = std::max(input.dim(), target.dim());
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < size_t(input.dim()) ? input.size(input.dim() - 1 - i) : 1;
    const int64_t b = i < size_t(target.dim()) ? target.size(target.dim() - 1 - i) : 1;
    KILN_CHECK(a == b || a == 1 || b == 1, op, ": target ", shape_str(target), " and input ", shape_str(input),
               " have different sizes that cannot be broadcast together");
  }
  warn_once(op, detail::concat("using a target size (", target.sizes().vec(), ") that is different to the input size (",
                               input.sizes().vec(),
                               "). This will likely lead to incorrect results due to "
                               "broadcasting. Please ensure they have the same size."));
}

// Whether an optional weight is given, checked to be floating point and to broadcast to the
// input without changing its shape.
bool check_elementwise_weight(const Tensor& weight, const Tensor& input, const char* op, const char* what) {
  if (!weight.defined()) return false;
  check_floating(weight, op, what);
  const IntArrayRef from = weight.sizes(), to = input.sizes();
  bool broadcasts = from.size() <= to.size();
  for (size_t i = 1; broadcasts && i <= from.size(); ++i)
    broadcasts = from[from.size() - i] == 1 || from[from.size() - i] == to[to.size() - i];
  KILN_CHECK(broadcasts, op, ": ", what, " ", shape_str(weight), " does not broadcast to the input ", shape_str(input));
  return true;
}

bool is_computed(const Tensor& t) { return t.unsafeGetTensorImpl()->storage->node->computed(); }

// --- classification ---

// Checks a class-index target against input [C] / [N, C] / [N, C, d1, ...] and returns the class
// dimension.
int64_t check_class_target(const Tensor& input, const Tensor& target, int64_t ignore_index, const char* op) {
  check_floating(input, op, "input");
  KILN_CHECK(input.dim() >= 1, op, ": input must have at least 1 dimension, got ", shape_str(input));
  KILN_CHECK(target.defined(), op, ": target is undefined");
  KILN_CHECK(target.dtype() == kLong, op, ": expected a target of class indices of dtype int64, got ",
             shape_str(target));
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  Shape expected = input.sizes().vec();
  expected.erase(expected.begin() + class_dim);
  KILN_CHECK(target.sizes() == IntArrayRef(expected), op, ": expected a target of shape ", expected, " for input ",
             shape_str(input), ", got ", shape_str(target));
  // A target already computed is checked now; a pending one when it is computed (class_targets).
  const int64_t classes = input.size(class_dim);
  if (is_computed(target))
    for (int64_t t : target.to_vector<int64_t>())
      KILN_CHECK(t == ignore_index || (t >= 0 && t < classes), op, ": target ", t, " is out of bounds for ", classes,
                 " classes (input ", shape_str(input), ")");
  return class_dim;
}

void check_class_weight(const Tensor& weight, const Tensor& input, int64_t class_dim, const char* op) {
  if (!weight.defined()) return;
  check_floating(weight, op, "weight");
  KILN_CHECK(weight.dim() == 1 && weight.numel() == input.size(class_dim), op,
             ": weight tensor should be defined "
             "either for all ",
             input.size(class_dim), " classes or no classes but got weight tensor of shape ", shape_str(weight));
}

// [C] weights shaped to broadcast along the class dimension of `input`.
Tensor weight_along_classes(const Tensor& weight, const Tensor& input, int64_t class_dim) {
  Shape s(input.dim(), 1);
  s[class_dim] = weight.numel();
  return weight.reshape(s);
}

// The sum of all elements (no dims: every dim), of shape [1, ..., 1]: the shape of the reduction
// in the IR, so that values computed from it (a mean's gradient) can be computed with it.
Tensor sum_keeping_dims(const Tensor& x) { return x.sum(IntArrayRef{}, /*keepdim=*/true); }

// What class-index losses take from their targets, traced before anything reads the scores (see
// class_nll). Per-target values keep the class dim (size 1), the shape of the row reductions over
// the classes, so that the backward's per-target factors are computed with those reductions.
struct ClassTargets {
  int64_t class_dim = 0;
  Tensor ignored;        // bool, the target's shape with the class dim
  Tensor one_hot;        // bool, the scores' shape: the target's class
  Tensor target_weight;  // the scores' dtype, as `ignored`: the class weight, zero where ignored
  // For a mean (see reduce_by_weight), from the sum of target_weight: its reciprocal, and NaN
  // where it is zero, 0 elsewhere.
  Tensor inverse_total;
  Tensor no_weight;
};

ClassTargets class_targets(const Tensor& scores, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                           int64_t class_dim, Reduce r) {
  ClassTargets t;
  t.class_dim = class_dim;
  Tensor target_k = target.unsqueeze(class_dim);
  t.ignored = target_k == ignore_index;
  const int64_t classes = scores.size(class_dim);
  // Ignored targets read class 0 (any valid index) and are then weighted by zero.
  Tensor safe_target = where(t.ignored, Scalar(0), target_k);
  Tensor class_indices = arange(classes, TensorOptions(kLong).device(scores.device()));
  // A target still pending is read through the class indices (an identity map), so that a class
  // out of range fails when it is computed, as check_class_target fails at once on a computed one.
  if (!is_computed(target))
    safe_target = class_indices.index_select(0, safe_target.reshape({-1})).reshape(target_k.sizes());
  t.target_weight = logical_not(t.ignored).to(scores.dtype());
  if (weight.defined())
    t.target_weight = t.target_weight *
                      weight.to(scores.dtype()).index_select(0, safe_target.reshape({-1})).reshape(target_k.sizes());
  // The mean's denominator depends on the targets alone: computed first, it is ready before the
  // pass over the scores, which can then write the gradient too (the gradient is scaled by it).
  if (r == Reduce::Mean) {
    Tensor total = sum_keeping_dims(t.target_weight);
    t.inverse_total = total.reciprocal();
    t.no_weight = where(total == 0, Scalar(std::numeric_limits<double>::quiet_NaN()), zeros_like(total));
  }
  Shape along_classes(scores.dim(), 1);
  along_classes[class_dim] = classes;
  // Compared in float32 where every class index is exact in it (up to 2^24 classes): a 4-byte read
  // and one compare per score, where int64 took 8 bytes and two compares. (The target converts once
  // per row.)
  if (classes <= (int64_t(1) << 24))
    t.one_hot =
        arange(classes, TensorOptions(kFloat).device(scores.device())).reshape(along_classes) == safe_target.to(kFloat);
  else
    t.one_hot = class_indices.reshape(along_classes) == safe_target;
  return t;
}

// scores[target], per target (class dim kept): a sum over the classes of a one-hot `where`, not a
// gather. It fuses into the kernels that read the scores' rows anyway (a gather is a kernel
// boundary that would write log_softmax's output to memory), and its gradient is the one-hot
// `where` again, elementwise, where a gather's is a scatter into a tensor of zeros. The sum adds
// one value to zeros: exact. Traced before the other passes over the rows (log_sum_exp), so that
// they join its kernel (see fusion/plan.cpp).
Tensor picked_scores(const Tensor& scores, const ClassTargets& t) {
  return where(t.one_hot, scores, Scalar(0)).sum({t.class_dim}, /*keepdim=*/true);
}

// -log p[target] times the target's weight, where log p[target] = (picked - shift) - log_sum
// (nll_loss's scores are log p already: no shift, no log_sum).
Tensor class_nll(Tensor picked, const Tensor& shift, const Tensor& log_sum, const ClassTargets& t) {
  if (shift.defined()) picked = (picked - shift) - log_sum;
  return -(picked * t.target_weight);
}

// "mean" of a class-index loss divides by the total weight of the targets not ignored; "none"
// has the target's shape.
Tensor reduce_by_weight(const Tensor& loss, Reduce r, const ClassTargets& t) {
  switch (r) {
    case Reduce::Mean:
      // As libtorch's nll_loss: each target's loss scaled by 1 / total, an ignored one by zero, so
      // that its gradient is zero even when the total is (0 * 1 / 0 would be NaN); the mean of no
      // targets NaN. Traced here, after the passes over the scores, the scale joins them per row.
      return (sum_keeping_dims(loss * where(t.ignored, Scalar(0), t.inverse_total)) + t.no_weight).reshape({});
    case Reduce::Sum: return loss.sum();
    case Reduce::None: break;
  }
  return loss.squeeze(t.class_dim);
}

Tensor cross_entropy_probabilities(const Tensor& logits, const Tensor& target, const Tensor& weight, Reduce r,
                                   int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy";
  check_floating(logits, op, "input");
  KILN_CHECK(target.is_floating_point(), op,
             ": expected floating point type for target with class probabilities, "
             "got ",
             shape_str(target), " (class indices need a target without the class dimension)");
  KILN_CHECK(ignore_index < 0, op, ": ignore_index is not supported for floating point target");
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  check_class_weight(weight, logits, class_dim, op);
  const int64_t classes = logits.size(class_dim);
  Tensor log_probs = log_softmax(logits, class_dim);
  Tensor t = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / double(classes) : target;
  Tensor terms = log_probs * t;
  if (weight.defined()) terms = terms * weight_along_classes(weight.to(logits.dtype()), logits, class_dim);
  switch (r) {
    case Reduce::None: return -terms.sum({class_dim});
    case Reduce::Sum: return -terms.sum();
    case Reduce::Mean: break;
  }
  return -terms.sum() / double(logits.numel() / classes);
}

// log(x) clamped to >= -100 as libtorch's binary_cross_entropy does, with a finite gradient
// where x is 0 (log is then evaluated at 1 and its gradient masked away).
Tensor clamped_log(const Tensor& x) {
  Tensor positive = x > 0;
  Tensor safe = where(positive, x, ones_like(x));
  return where(positive, log(safe).clamp_min(-100), Scalar(-100.0));
}

}  // namespace

// --- classification ---

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, const Reduction& reduction,
                int64_t ignore_index) {
  const Reduce r = parse_reduction(reduction, "nll_loss");
  const int64_t class_dim = check_class_target(log_probs, target, ignore_index, "nll_loss");
  check_class_weight(weight, log_probs, class_dim, "nll_loss");
  tracer::EagerGroup eager_group;
  ClassTargets targets = class_targets(log_probs, target, weight, ignore_index, class_dim, r);
  Tensor loss = reduce_by_weight(class_nll(picked_scores(log_probs, targets), Tensor(), Tensor(), targets), r, targets);
  return log_probs.dim() <= 2 ? named(loss, "NllLossBackward0", {log_probs}) : loss;
}

Tensor cross_entropy_loss(const Tensor& logits, const Tensor& target, const Tensor& weight, const Reduction& reduction,
                          int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy";
  const Reduce r = parse_reduction(reduction, op);
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, op, ": label_smoothing must be between 0.0 and 1.0, got ",
             label_smoothing);
  KILN_CHECK(logits.defined() && target.defined(), op, ": input and target must be defined");
  KILN_CHECK(logits.dim() >= 1, op, ": input must have at least 1 dimension (the classes), got ", shape_str(logits));
  // A target of the input's shape holds class probabilities; otherwise class indices.
  if (logits.sizes() == target.sizes())
    return cross_entropy_probabilities(logits, target, weight, r, ignore_index, label_smoothing);
  const int64_t class_dim = check_class_target(logits, target, ignore_index, op);
  check_class_weight(weight, logits, class_dim, op);
  if (!weight.defined() && label_smoothing == 0)
    if (auto native = detail::native::cross_entropy(logits, target, reduction.name(), ignore_index)) return *native;
  tracer::EagerGroup eager_group;
  // log p = (logits - max) - log_sum: the picked logits and the row maxima, the sum of
  // exponentials and the gradient are passes over each row of logits, in one kernel.
  ClassTargets targets = class_targets(logits, target, weight, ignore_index, class_dim, r);
  Tensor picked = picked_scores(logits, targets);
  auto [max, log_sum] = detail::log_sum_exp(logits, {class_dim});
  Tensor nll = reduce_by_weight(class_nll(picked, max, log_sum, targets), r, targets);
  if (label_smoothing == 0) return logits.dim() <= 2 ? named(nll, "NllLossBackward0", {logits}) : nll;
  Tensor log_probs = (logits - max) - log_sum;
  // The uniform part: -sum over classes of log p (weighted per class), zero where ignored.
  Tensor all_classes =
      weight.defined() ? log_probs * weight_along_classes(weight.to(logits.dtype()), logits, class_dim) : log_probs;
  Tensor smooth = (-all_classes.sum({class_dim}, /*keepdim=*/true)).masked_fill(targets.ignored, 0.0);
  Tensor smooth_reduced = reduce_by_weight(smooth, r, targets);
  const double classes = double(logits.size(class_dim));
  return nll * (1 - label_smoothing) + smooth_reduced * (label_smoothing / classes);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const Reduction& reduction) {
  const char* op = "binary_cross_entropy";
  const Reduce r = parse_reduction(reduction, op);
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  KILN_CHECK(input.sizes() == target.sizes(), op, ": using a target size (", shape_str(target),
             ") that is different to the input size (", shape_str(input),
             ") is deprecated. Please ensure they have "
             "the same size.");
  Tensor loss = -(target * clamped_log(input) + (1 - target) * clamped_log(1 - input));
  if (check_elementwise_weight(weight, input, op, "weight")) loss = loss * weight;
  return named(reduce(loss, r), "BinaryCrossEntropyBackward0", {input});
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, const Reduction& reduction) {
  const char* op = "binary_cross_entropy_with_logits";
  const Reduce r = parse_reduction(reduction, op);
  check_floating(input, op, "input");
  check_floating(target, op, "target");
  KILN_CHECK(input.sizes() == target.sizes(), op, ": target size (", shape_str(target),
             ") must be the same as input size (", shape_str(input), ")");
  // (1 - t) x + w_pos softplus(-x), with w_pos = 1 + (pos_weight - 1) t: softplus(-x) is -log
  // sigmoid(x), and (1 - t) x + softplus(-x) is -log(1 - sigmoid(x)) on the negative side.
  Tensor positive_weight = ones_like(target);
  if (check_elementwise_weight(pos_weight, input, op, "pos_weight")) positive_weight = 1 + (pos_weight - 1) * target;
  Tensor loss = (1 - target) * input - positive_weight * log_sigmoid(input);
  if (check_elementwise_weight(weight, input, op, "weight")) loss = loss * weight;
  return named(reduce(loss, r), "BinaryCrossEntropyWithLogitsBackward0", {input});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Reduction& reduction, double label_smoothing) {
  return cross_entropy_loss(logits, target, Tensor(), reduction, -100, label_smoothing);
}

// --- regression ---

Tensor mse_loss(const Tensor& input, const Tensor& target, const Reduction& reduction) {
  const Reduce r = parse_reduction(reduction, "mse_loss");
  check_pointwise(input, target, "mse_loss");
  Tensor diff = input - target;
  return named(reduce(diff * diff, r), "MseLossBackward0", {input, target});
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const Reduction& reduction) {
  const Reduce r = parse_reduction(reduction, "l1_loss");
  check_pointwise(input, target, "l1_loss");
  return reduce((input - target).abs(), r);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const Reduction& reduction, double beta) {
  const Reduce r = parse_reduction(reduction, "smooth_l1_loss");
  KILN_CHECK(beta >= 0, "smooth_l1_loss: beta must not be negative, got ", beta);
  check_pointwise(input, target, "smooth_l1_loss");
  Tensor diff = (input - target).abs();
  if (beta == 0) return reduce(diff, r);
  // Quadratic below beta, linear above; the two pieces meet with equal value and slope.
  return named(reduce(where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta), r), "SmoothL1LossBackward0",
               {input, target});
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const Reduction& reduction, double delta) {
  const Reduce r = parse_reduction(reduction, "huber_loss");
  KILN_CHECK(delta > 0, "huber_loss: delta must be positive, got ", delta);
  check_pointwise(input, target, "huber_loss");
  Tensor diff = (input - target).abs();
  return named(reduce(where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta), r), "HuberLossBackward0",
               {input, target});
}

// --- the log-sigmoid family ---

// softplus(x) = log(1 + exp(x)) by its stable branch on each side of 0, each branch given only
// arguments on its own side, so neither overflows in the value or the gradient.
Tensor softplus(const Tensor& x, const Scalar& beta_arg, const Scalar& threshold_arg) {
  check_floating(x, "softplus", "input");
  const double beta = beta_arg.to<double>(), threshold = threshold_arg.to<double>();
  Tensor bx = beta == 1 ? x : x * beta;
  Tensor positive = bx > 0;
  Tensor on_positive = where(positive, bx, zeros_like(bx)), on_negative = where(positive, zeros_like(bx), bx);
  Tensor value = where(positive, on_positive + log1p(exp(-on_positive)), log1p(exp(on_negative)));
  if (beta != 1) value = value / beta;
  return named(where(bx > threshold, x, value), "SoftplusBackward0", {x});
}

Tensor log_sigmoid(const Tensor& x) { return named(-softplus(-x), "LogSigmoidBackward0", {x}); }

}  // namespace kiln
