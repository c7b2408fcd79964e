// nn::functional's forms and the modules of frontend/nn/activations.h, over kiln's activations
// (frontend/activations.cpp). An inplace option writes the result into the input, as libtorch's.
#include "frontend/nn/activations.h"

#include "frontend/ops.h"

namespace kiln::nn {
namespace functional {

namespace {
Tensor maybe_inplace(Tensor& input, const Tensor& out, bool inplace) { return inplace ? input.copy_(out) : out; }
}  // namespace

Tensor elu(Tensor input, const ELUFuncOptions& options) {
  return maybe_inplace(input, kiln::elu(input, options.alpha()), options.inplace());
}
Tensor selu(Tensor input, const SELUFuncOptions& options) {
  return maybe_inplace(input, kiln::selu(input), options.inplace());
}
Tensor celu(Tensor input, const CELUFuncOptions& options) {
  return maybe_inplace(input, kiln::celu(input, options.alpha()), options.inplace());
}
Tensor hardtanh(Tensor input, const HardtanhFuncOptions& options) {
  return maybe_inplace(input, kiln::hardtanh(input, options.min_val(), options.max_val()), options.inplace());
}
Tensor relu6(Tensor input, const ReLU6FuncOptions& options) {
  return maybe_inplace(input, kiln::relu6(input), options.inplace());
}
Tensor hardsigmoid(const Tensor& input) { return kiln::hardsigmoid(input); }
Tensor hardswish(const Tensor& input) { return kiln::hardswish(input); }
Tensor mish(const Tensor& input) { return kiln::mish(input); }
Tensor softsign(const Tensor& input) { return kiln::softsign(input); }

}  // namespace functional

namespace {
const char* inplace_suffix(bool inplace) { return inplace ? ", inplace=true" : ""; }
}  // namespace

void ELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ELU(alpha=" << options.alpha() << inplace_suffix(options.inplace()) << ")";
}
void SELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::SELU(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void CELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::CELU(alpha=" << options.alpha() << inplace_suffix(options.inplace()) << ")";
}
void HardtanhImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
         << inplace_suffix(options.inplace()) << ")";
}
void ReLU6Impl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void HardsigmoidImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Hardsigmoid()"; }
void HardswishImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Hardswish()"; }
void MishImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Mish()"; }
void SoftsignImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Softsign()"; }

}  // namespace kiln::nn
