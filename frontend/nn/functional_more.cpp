// More of nn::functional (functional_more.h): composites of kiln's ops, as libtorch 1.13 defines
// each.
#include "frontend/nn/functional_more.h"

#include <cmath>
#include <numeric>

#include "frontend/nn/loss_reduction.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using detail::shape_str;

namespace {

// The last three dims of input split into `five`, permuted by `order` and merged into `three`
// (pixel_shuffle and pixel_unshuffle); leading dims are kept.
Tensor rearrange_last3(const Tensor& input, std::initializer_list<int64_t> five, std::initializer_list<int64_t> order,
                       std::initializer_list<int64_t> three) {
  const int64_t lead = input.dim() - 3;
  Shape split(input.sizes().begin(), input.sizes().begin() + lead), out = split;
  split.insert(split.end(), five);
  out.insert(out.end(), three);
  std::vector<int64_t> dims(static_cast<size_t>(lead));
  std::iota(dims.begin(), dims.end(), 0);
  for (int64_t d : order) dims.push_back(lead + d);
  return input.reshape(split).permute(dims).reshape(out);
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* op) {
  KILN_CHECK(a.sizes() == b.sizes(), op, ": input ", shape_str(a), " and target ", shape_str(b),
             " must have the same shape");
}
}  // namespace

Tensor normalize(const Tensor& input, NormalizeFuncOptions options) {
  const Tensor norm = input.norm(options.p(), {options.dim()}, /*keepdim=*/true);
  return input / norm.clamp_min(options.eps()).expand_as(input);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& options) {
  const std::vector<int64_t> shape = broadcast_shapes(x1.sizes(), x2.sizes());
  const int64_t dim = detail::wrap_dim(options.dim(), int64_t(shape.size()), "cosine_similarity");
  const Tensor a = x1.expand(shape), b = x2.expand(shape);
  const Tensor na = a.norm(2, {dim}, true).clamp_min(options.eps());
  const Tensor nb = b.norm(2, {dim}, true).clamp_min(options.eps());
  return ((a / na) * (b / nb)).sum({dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& options) {
  const Tensor diff = x1 - x2 + options.eps();
  return diff.norm(options.p(), {-1}, options.keepdim());
}

Tensor pixel_shuffle(const Tensor& input, const PixelShuffleFuncOptions& options) {
  const int64_t r = options.upscale_factor();
  KILN_CHECK(input.dim() >= 3, "pixel_shuffle: expects input to have at least 3 dimensions, but got input with ",
             input.dim(), " dimension(s)");
  KILN_CHECK(r > 0, "pixel_shuffle: upscale_factor must be greater than 0, but got: ", r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(c % (r * r) == 0,
             "pixel_shuffle: expects its input's 'channel' dimension to be divisible by the square "
             "of upscale_factor, but input.size(-3)=",
             c, " is not divisible by ", r * r);
  // [C, r, r, H, W] -> [C, H, r, W, r]
  return rearrange_last3(input, {c / (r * r), r, r, h, w}, {0, 3, 1, 4, 2}, {c / (r * r), h * r, w * r});
}

Tensor pixel_unshuffle(const Tensor& input, const PixelUnshuffleFuncOptions& options) {
  const int64_t r = options.downscale_factor();
  KILN_CHECK(input.dim() >= 3, "pixel_unshuffle: expects input to have at least 3 dimensions, but got input with ",
             input.dim(), " dimension(s)");
  KILN_CHECK(r > 0, "pixel_unshuffle: downscale_factor must be greater than 0, but got: ", r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(h % r == 0 && w % r == 0,
             "pixel_unshuffle: expects height and width to be divisible by "
             "downscale_factor, but input ",
             shape_str(input), " is not divisible by ", r);
  // [C, H, r, W, r] -> [C, r, r, H, W]
  return rearrange_last3(input, {c, h / r, r, w / r, r}, {0, 2, 4, 1, 3}, {c * r * r, h / r, w / r});
}

Tensor glu(const Tensor& input, const GLUFuncOptions& options) {
  KILN_CHECK(input.dim() > 0, "glu: does not support scalars because halving size must be even");
  const int64_t d = detail::wrap_dim(options.dim(), input.dim(), "glu");
  KILN_CHECK(input.size(d) % 2 == 0, "glu: Halving dimension must be even, but dimension ", d, " is size ",
             input.size(d));
  const int64_t half = input.size(d) / 2;
  return input.narrow(d, 0, half) * input.narrow(d, half, half).sigmoid();
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  // target (log p, with log_target) against input (log q): p (log p - log q), 0 where p is 0.
  const Tensor loss = options.log_target()
                          ? target.exp() * (target - input)
                          : where(target > 0, target * where(target > 0, target, 1).log(), 0) - target * input;
  if (options.reduction().is<enumtype::kBatchMean>()) return input.dim() == 0 ? loss.sum() : loss.sum() / input.size(0);
  return reduce_loss(loss, Reduction(options.reduction().name()), "kl_div");
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options) {
  check_same_shape(input, target, "soft_margin_loss");
  return reduce_loss((-target * input).exp().log1p(), options.reduction(), "soft_margin_loss");
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options) {
  KILN_CHECK(input1.dim() == target.dim() && input2.dim() == target.dim(),
             "margin_ranking_loss: All input tensors should have same dimension but got sizes: input1: ",
             input1.sizes().vec(), ", input2: ", input2.sizes().vec(), ", target: ", target.sizes().vec());
  return reduce_loss((-target * (input1 - input2) + options.margin()).clamp_min(0), options.reduction(),
                     "margin_ranking_loss");
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& options) {
  const Tensor zeros = zeros_like(input);
  const Tensor margin_part = where(target != 1, (options.margin() - input).clamp_min(0), zeros);
  const Tensor self_part = where(target != -1, input, zeros);
  return reduce_loss(margin_part + self_part, options.reduction(), "hinge_embedding_loss");
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options) {
  KILN_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
             "triplet_margin_loss: All inputs should have same dimension but got ", anchor.dim(), "D, ", positive.dim(),
             "D and ", negative.dim(), "D inputs.");
  const auto distance = PairwiseDistanceFuncOptions().p(options.p()).eps(options.eps());
  const Tensor d_pos = pairwise_distance(anchor, positive, distance);
  Tensor d_neg = pairwise_distance(anchor, negative, distance);
  if (options.swap()) d_neg = minimum(d_neg, pairwise_distance(positive, negative, distance));
  return reduce_loss((d_pos - d_neg + options.margin()).clamp_min(0), options.reduction(), "triplet_margin_loss");
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options) {
  Tensor loss = options.log_input() ? input.exp() - target * input : input - target * (input + options.eps()).log();
  if (options.full()) {
    // Stirling's approximation of log(target!), where target > 1.
    const Tensor t = where(target > 1, target, 1);
    const Tensor stirling = t * t.log() - t + (t * (2 * M_PI)).log() * 0.5;
    loss = loss + where(target > 1, stirling, 0);
  }
  return reduce_loss(loss, options.reduction(), "poisson_nll_loss");
}

}  // namespace kiln::nn::functional
