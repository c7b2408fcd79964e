// Printing and forward passes of modules_more.h's modules, as libtorch 1.13 prints them.
#include "frontend/nn/modules_more.h"

#include <cctype>

#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::operator<<;  // sizes print as [2, 3]

void PixelShuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PixelShuffle(upscale_factor=" << options.upscale_factor() << ")";
}
void PixelUnshuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}
void GLUImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::GLU(dim=" << options.dim() << ")"; }
void CosineSimilarityImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}
void PairwiseDistanceImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
         << ", keepdim=" << options.keepdim() << ")";
}
void KLDivLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::KLDivLoss()"; }
void HingeEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")";
}
void SoftMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::SoftMarginLoss()"; }
void PoissonNLLLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::PoissonNLLLoss()"; }
void MultiMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin() << ", weight=";
  if (options.weight().defined())
    stream << options.weight();
  else
    stream << "[ Tensor (undefined) ]";
  const std::string& reduction = options.reduction().name();  // printed as libtorch's tag: kMean
  stream << ", reduction=k" << char(std::toupper(reduction[0])) << reduction.substr(1) << ")";
}
void MultiLabelMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MultiLabelMarginLoss()";
}
void MultiLabelSoftMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::MultiLabelSoftMarginLoss()";
}
void MarginRankingLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::MarginRankingLoss()"; }
void CosineEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::CosineEmbeddingLoss(margin=" << options.margin() << ")";
}
void TripletMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p()
         << ", eps=" << options.eps() << ", swap=" << options.swap() << ")";
}

template <size_t D>
Tensor PadImplBase<D>::forward(const Tensor& input) const {
  const IntArrayRef padding = padding_;
  if (std::string(mode_) != "constant") return kiln::pad(input, padding, mode_);
  if (D < 3) return kiln::pad(input, padding, mode_, value_);
  // kiln::pad's constant mode pads two dimensions; the third (front, back) is added here.
  KILN_CHECK(input.dim() >= 3, name_, ": expected an input of at least 3 dimensions, got ",
             kiln::detail::shape_str(input));
  const Tensor inner = kiln::pad(input, IntArrayRef(padding.data(), 4), mode_, value_);
  const int64_t front = padding[4], back = padding[5];
  KILN_CHECK(front >= 0 && back >= 0, name_, ": negative padding is not supported, got ", padding);
  Shape front_shape = inner.sizes().vec(), back_shape = front_shape;
  front_shape[front_shape.size() - 3] = front;
  back_shape[back_shape.size() - 3] = back;
  return cat({full(front_shape, value_, input.options()), inner, full(back_shape, value_, input.options())}, -3);
}

template <size_t D>
void PadImplBase<D>::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::" << name_ << "(padding=" << IntArrayRef(padding_);
  if (std::string(mode_) == "constant" && std::string(name_) != "ZeroPad2d") stream << ", value=" << value_;
  stream << ")";
}

template class PadImplBase<1>;
template class PadImplBase<2>;
template class PadImplBase<3>;

}  // namespace kiln::nn
