// The margin losses libtorch has beyond functional_more.h's: multilabel margin, multilabel soft
// margin, multi-class margin and cosine embedding, each with libtorch's options (losses_more.cpp).
#pragma once
#include <ostream>

#include "frontend/nn/module.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

struct MultiLabelMarginLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(MultiLabelMarginLossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
};
struct MultiLabelSoftMarginLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(MultiLabelSoftMarginLossOptions)
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Reduction, reduction) = kMean;
};
struct MultiMarginLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(MultiMarginLossOptions)
  KILN_ARG(int64_t, p) = 1;
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(Tensor, weight) = {};
  KILN_ARG(Reduction, reduction) = kMean;
};
struct CTCLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(CTCLossOptions)
  KILN_ARG(int64_t, blank) = 0;
  KILN_ARG(Reduction, reduction) = kMean;
  KILN_ARG(bool, zero_infinity) = false;
};
struct CosineEmbeddingLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(CosineEmbeddingLossOptions)
  KILN_ARG(double, margin) = 0.0;
  KILN_ARG(Reduction, reduction) = kMean;
};

namespace functional {
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using CTCLossFuncOptions = CTCLossOptions;

// input [N, C] (or [C]); target of the same shape, int64: the target classes of each sample,
// ended by the first -1. Per sample, the sum over targets j and non-targets i of
// max(0, 1 - (x[j] - x[i])), divided by C. Reads target on the host.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options = {});
// -(t log sigmoid(x) + (1 - t) log sigmoid(-x)), times weight, averaged over the classes (last axis).
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options = {});
// input [N, C] (or [C]), target [N] class indices: per sample, the sum over i != y of
// weight[y] max(0, margin - x[y] + x[i])^p, divided by C (p is 1 or 2).
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options = {});
// 1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1; cos along the
// last axis.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options = {});
// Connectionist temporal classification: log_probs [T, N, C] (or [T, C]), targets [N, S] padded
// or the concatenated targets [sum(target_lengths)], input_lengths and target_lengths [N] int64;
// per sample, -log of the summed probability of every alignment (the forward recursion over time
// in log space, from kiln's ops, so the gradient is autograd's). Infinite losses (no alignment
// fits) become 0 with zero_infinity; mean divides each loss by its target length, then averages.
// Reads the lengths and targets on the host.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& options = {});
}  // namespace functional

class CTCLossImpl : public Module {
 public:
  explicit CTCLossImpl(const CTCLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) {
    return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
  }
  void pretty_print(std::ostream& stream) const override { stream << "kiln::nn::CTCLoss()"; }
  CTCLossOptions options;
};
KILN_MODULE(CTCLoss);

}  // namespace kiln::nn
