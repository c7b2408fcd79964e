// The losses with every libtorch option (class weights, ignore_index), which frontend/ops.h's
// plain forms and nn::functional's option forms both call. Composites of kiln ops, so their
// gradients come from the ops they are made of.
#pragma once
#include "frontend/nn/enum.h"
#include "frontend/tensor.h"

namespace kiln::detail {

// input [N, C] (or [C], or [N, C, d1, ...]) of log-probabilities; target of class indices, int64,
// shaped as input without its class dimension. `weight` (optional, [C]) scales each class.
// Targets equal to ignore_index add nothing, and "mean" divides by the weight of the rest.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, const Reduction& reduction,
                int64_t ignore_index);
// log_softmax over the class dimension, then nll_loss; the target is either class indices (as
// nll_loss) or class probabilities of input's shape. label_smoothing mixes the target with the
// uniform distribution.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, const Reduction& reduction,
                     int64_t ignore_index, double label_smoothing);
// -(t log x + (1 - t) log(1 - x)) with each log clamped to >= -100 (as libtorch), times weight.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            const Reduction& reduction);

}  // namespace kiln::detail
