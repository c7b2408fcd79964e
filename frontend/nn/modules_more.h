// Modules over nn::functional's distances, shuffles, glu, margin losses and padding modes
// (functional_more.h, losses_more.h, pad), each a ModuleHolder over its `...Impl` as in libtorch
// 1.13, with libtorch's options and printing (modules_more.cpp).
#pragma once
#include "frontend/nn/functional.h"
#include "frontend/nn/losses_more.h"
#include "frontend/nn/module.h"

namespace kiln::nn {

// A module whose forward is one functional call with its options.
#define KILN_FUNCTIONAL_MODULE(Name, Options, fn)                                  \
  class Name##Impl : public Module {                                               \
   public:                                                                         \
    explicit Name##Impl(const Options& options = {}) : options(options) {}         \
    Tensor forward(const Tensor& input) { return functional::fn(input, options); } \
    void pretty_print(std::ostream& stream) const override;                        \
    Options options;                                                               \
  };                                                                               \
  KILN_MODULE(Name)
#define KILN_BINARY_MODULE(Name, Options, fn, a, b)                                            \
  class Name##Impl : public Module {                                                           \
   public:                                                                                     \
    explicit Name##Impl(const Options& options = {}) : options(options) {}                     \
    Tensor forward(const Tensor& a, const Tensor& b) { return functional::fn(a, b, options); } \
    void pretty_print(std::ostream& stream) const override;                                    \
    Options options;                                                                           \
  };                                                                                           \
  KILN_MODULE(Name)
#define KILN_TERNARY_MODULE(Name, Options, fn, a, b, c)                                                            \
  class Name##Impl : public Module {                                                                               \
   public:                                                                                                         \
    explicit Name##Impl(const Options& options = {}) : options(options) {}                                         \
    Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c) { return functional::fn(a, b, c, options); } \
    void pretty_print(std::ostream& stream) const override;                                                        \
    Options options;                                                                                               \
  };                                                                                                               \
  KILN_MODULE(Name)

class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::pixel_shuffle(input, options); }
  void pretty_print(std::ostream& stream) const override;
  PixelShuffleOptions options;
};
KILN_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::pixel_unshuffle(input, options); }
  void pretty_print(std::ostream& stream) const override;
  PixelUnshuffleOptions options;
};
KILN_MODULE(PixelUnshuffle);

KILN_FUNCTIONAL_MODULE(GLU, GLUOptions, glu);
KILN_BINARY_MODULE(CosineSimilarity, CosineSimilarityOptions, cosine_similarity, x1, x2);
KILN_BINARY_MODULE(PairwiseDistance, PairwiseDistanceOptions, pairwise_distance, x1, x2);
KILN_BINARY_MODULE(KLDivLoss, KLDivLossOptions, kl_div, input, target);
KILN_BINARY_MODULE(HingeEmbeddingLoss, HingeEmbeddingLossOptions, hinge_embedding_loss, input, target);
KILN_BINARY_MODULE(SoftMarginLoss, SoftMarginLossOptions, soft_margin_loss, input, target);
KILN_BINARY_MODULE(PoissonNLLLoss, PoissonNLLLossOptions, poisson_nll_loss, log_input, target);
KILN_BINARY_MODULE(MultiMarginLoss, MultiMarginLossOptions, multi_margin_loss, input, target);
KILN_BINARY_MODULE(MultiLabelMarginLoss, MultiLabelMarginLossOptions, multilabel_margin_loss, input, target);
KILN_BINARY_MODULE(MultiLabelSoftMarginLoss, MultiLabelSoftMarginLossOptions, multilabel_soft_margin_loss, input,
                   target);
KILN_TERNARY_MODULE(MarginRankingLoss, MarginRankingLossOptions, margin_ranking_loss, input1, input2, target);
KILN_TERNARY_MODULE(CosineEmbeddingLoss, CosineEmbeddingLossOptions, cosine_embedding_loss, input1, input2, target);
KILN_TERNARY_MODULE(TripletMarginLoss, TripletMarginLossOptions, triplet_margin_loss, anchor, positive, negative);
#undef KILN_FUNCTIONAL_MODULE
#undef KILN_BINARY_MODULE
#undef KILN_TERNARY_MODULE

// --- padding: padding = {left, right[, top, bottom[, front, back]]}, or one value for all ---

template <size_t D>
struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  KILN_ARG(ExpandingArray<D * 2>, padding);
  KILN_ARG(double, value);
};
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

template <size_t D>
struct PaddingOptions {
  /* implicit */ PaddingOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}
  KILN_ARG(ExpandingArray<D * 2>, padding);
};
using ZeroPad2dOptions = PaddingOptions<2>;
template <size_t D>
using ReflectionPadOptions = PaddingOptions<D>;
using ReflectionPad1dOptions = PaddingOptions<1>;
using ReflectionPad2dOptions = PaddingOptions<2>;
using ReflectionPad3dOptions = PaddingOptions<3>;
template <size_t D>
using ReplicationPadOptions = PaddingOptions<D>;
using ReplicationPad1dOptions = PaddingOptions<1>;
using ReplicationPad2dOptions = PaddingOptions<2>;
using ReplicationPad3dOptions = PaddingOptions<3>;

// Pads the last D dimensions of input in `mode` (kiln::pad); `name` is what the module prints.
template <size_t D>
class PadImplBase : public Module {
 public:
  PadImplBase(ExpandingArray<D * 2> padding, const char* mode, double value, const char* name)
      : padding_(padding), mode_(mode), value_(value), name_(name) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;

 protected:
  ExpandingArray<D * 2> padding_;
  const char* mode_;
  double value_;
  const char* name_;
};

template <size_t D>
class ConstantPadImpl : public PadImplBase<D> {
 public:
  explicit ConstantPadImpl(const ConstantPadOptions<D>& options, const char* name)
      : PadImplBase<D>(options.padding(), "constant", options.value(), name), options(options) {}
  ConstantPadOptions<D> options;
};
#define KILN_CONSTANT_PAD(Name, D)                                                                                 \
  class Name##Impl : public ConstantPadImpl<D> {                                                                   \
   public:                                                                                                         \
    explicit Name##Impl(const ConstantPadOptions<D>& options) : ConstantPadImpl<D>(options, #Name) {}              \
    Name##Impl(ExpandingArray<D * 2> padding, double value) : Name##Impl(ConstantPadOptions<D>(padding, value)) {} \
  };                                                                                                               \
  KILN_MODULE(Name)
KILN_CONSTANT_PAD(ConstantPad1d, 1);
KILN_CONSTANT_PAD(ConstantPad2d, 2);
KILN_CONSTANT_PAD(ConstantPad3d, 3);
#undef KILN_CONSTANT_PAD

#define KILN_MODE_PAD(Name, D, mode, value)                                          \
  class Name##Impl : public PadImplBase<D> {                                         \
   public:                                                                           \
    explicit Name##Impl(const PaddingOptions<D>& options)                            \
        : PadImplBase<D>(options.padding(), mode, value, #Name), options(options) {} \
    PaddingOptions<D> options;                                                       \
  };                                                                                 \
  KILN_MODULE(Name)
KILN_MODE_PAD(ZeroPad2d, 2, "constant", 0.0);
KILN_MODE_PAD(ReflectionPad1d, 1, "reflect", 0.0);
KILN_MODE_PAD(ReflectionPad2d, 2, "reflect", 0.0);
KILN_MODE_PAD(ReflectionPad3d, 3, "reflect", 0.0);
KILN_MODE_PAD(ReplicationPad1d, 1, "replicate", 0.0);
KILN_MODE_PAD(ReplicationPad2d, 2, "replicate", 0.0);
KILN_MODE_PAD(ReplicationPad3d, 3, "replicate", 0.0);
#undef KILN_MODE_PAD

}  // namespace kiln::nn
