// More of nn::functional, each with libtorch's options struct: normalization and distances,
// pixel shuffles, glu, and the remaining losses (kl_div, soft margin, margin ranking, hinge
// embedding, triplet margin, Poisson NLL). Composites of kiln's ops, so their gradients come from
// the ops they are made of.
#pragma once
#include "frontend/nn/options.h"
#include "frontend/tensor.h"

namespace kiln::nn {

struct CosineSimilarityOptions {
  KILN_ARG(int64_t, dim) = 1;
  KILN_ARG(double, eps) = 1e-8;
};
struct PairwiseDistanceOptions {
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(double, eps) = 1e-6;
  KILN_ARG(bool, keepdim) = false;
};
struct PixelShuffleOptions {
  /* implicit */ PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  KILN_ARG(int64_t, upscale_factor);
};
struct PixelUnshuffleOptions {
  /* implicit */ PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  KILN_ARG(int64_t, downscale_factor);
};
struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}
  KILN_ARG(int64_t, dim);
};

using KLDivReduction = EnumChoice<enumtype::kNone, enumtype::kBatchMean, enumtype::kSum, enumtype::kMean>;
struct KLDivLossOptions {
  KLDivLossOptions() = default;
  template <typename Tag, typename = decltype(KLDivReduction(Tag{}))>
  KLDivLossOptions(Tag r) : reduction_(r) {}
  KILN_ARG(KLDivReduction, reduction) = kMean;
  KILN_ARG(bool, log_target) = false;
};
struct SoftMarginLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(SoftMarginLossOptions)
  KILN_ARG(Reduction, reduction) = kMean;
};
struct MarginRankingLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(MarginRankingLossOptions)
  KILN_ARG(double, margin) = 0;
  KILN_ARG(Reduction, reduction) = kMean;
};
struct HingeEmbeddingLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(HingeEmbeddingLossOptions)
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(Reduction, reduction) = kMean;
};
struct TripletMarginLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(TripletMarginLossOptions)
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(double, eps) = 1e-6;
  KILN_ARG(bool, swap) = false;
  KILN_ARG(Reduction, reduction) = kMean;
};
struct PoissonNLLLossOptions {
  KILN_REDUCTION_CONSTRUCTORS(PoissonNLLLossOptions)
  KILN_ARG(bool, log_input) = true;
  KILN_ARG(bool, full) = false;
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(Reduction, reduction) = kMean;
};

namespace functional {

struct NormalizeFuncOptions {
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(int64_t, dim) = 1;
  KILN_ARG(double, eps) = 1e-12;
};
using CosineSimilarityFuncOptions = CosineSimilarityOptions;
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;
using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;
using GLUFuncOptions = GLUOptions;
using KLDivFuncOptions = KLDivLossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;

// x / max(||x||_p, eps) along dim.
Tensor normalize(const Tensor& input, NormalizeFuncOptions options = {});
// <x1, x2> / (max(||x1||, eps) max(||x2||, eps)) along dim, as libtorch 1.13 computes it.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options = {});
// ||x1 - x2 + eps||_p along the last dimension.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options = {});
// [..., C r^2, H, W] -> [..., C, H r, W r], and back.
Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options);
Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options);
// a * sigmoid(b), a and b the halves of input along dim.
Tensor glu(const Tensor& input, const GLUFuncOptions& options = {});
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options = {});
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options = {});
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options = {});
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target,
                            const HingeEmbeddingLossFuncOptions& options = {});
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options = {});
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options = {});

}  // namespace functional
}  // namespace kiln::nn
