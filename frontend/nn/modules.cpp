// The built-in modules: parameter registration and initialization as libtorch 1.13 does them, so a
// seeded program starts from the same weights; forward passes go through nn::functional.
#include "frontend/nn/modules.h"

#include <cmath>

#include "frontend/nn/init.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn {

using kiln::detail::shape_str;
using kiln::operator<<;  // shapes print as [2, 3]

// --- Linear ---

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  KILN_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
             "Linear: in_features and out_features must "
             "not be negative, got ",
             options.in_features(), " and ", options.out_features());
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", kiln::empty({options.out_features(), options.in_features()}));
  bias = options.bias() ? register_parameter("bias", kiln::empty({options.out_features()}))
                        : register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

void LinearImpl::reset_parameters() { init::default_layer_init_(weight, bias); }

Tensor LinearImpl::forward(const Tensor& input) {
  KILN_CHECK(input.dim() >= 1 && input.size(-1) == options.in_features(),
             "Linear: expected input with last "
             "dimension ",
             options.in_features(), ", got ", shape_str(input));
  return functional::linear(input, weight, bias);
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

// --- LayerNorm ---

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  KILN_CHECK(!options.normalized_shape().empty(), "LayerNorm: normalized_shape must not be empty");
  for (auto d : options.normalized_shape())
    KILN_CHECK(d > 0, "LayerNorm: normalized_shape must be positive, got ", options.normalized_shape());
  reset();
}

void LayerNormImpl::reset() {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", kiln::empty(options.normalized_shape()));
    bias = register_parameter("bias", kiln::empty(options.normalized_shape()));
  } else {
    weight = register_parameter("weight", Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", Tensor(), /*requires_grad=*/false);
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return functional::layer_norm(
      input, functional::LayerNormFuncOptions(options.normalized_shape()).weight(weight).bias(bias).eps(options.eps()));
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::LayerNorm(" << options.normalized_shape() << ", eps=" << options.eps()
         << ", elementwise_affine=" << options.elementwise_affine() << ")";
}

// --- Embedding ---

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
  KILN_CHECK(options.num_embeddings() > 0 && options.embedding_dim() > 0,
             "Embedding: num_embeddings and "
             "embedding_dim must be positive, got ",
             options.num_embeddings(), " and ", options.embedding_dim());
  reset();
}

void EmbeddingImpl::reset() {
  weight = register_parameter("weight", kiln::empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() { init::normal_(weight); }

Tensor EmbeddingImpl::forward(const Tensor& indices) { return functional::embedding(indices, weight); }

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Embedding(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim() << ")";
}

// --- Dropout, Flatten, Identity ---

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
  KILN_CHECK(options.p() >= 0 && options.p() <= 1, "Dropout: dropout probability has to be between 0 and 1, but got ",
             options.p());
}

Tensor DropoutImpl::forward(Tensor input) {
  return functional::dropout(
      std::move(input),
      functional::DropoutFuncOptions().p(options.p()).inplace(options.inplace()).training(is_training()));
}

void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::Dropout(p=" << options.p() << ", inplace=" << options.inplace() << ")";
}

Tensor FlattenImpl::forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }

void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

void IdentityImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Identity()"; }

// --- activations and losses: printing only ---

void ReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}
void LeakyReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LeakyReLU(negative_slope=" << options.negative_slope()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::GELU(approximate=" << options.approximate() << ")";
}
void TanhImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Tanh()"; }
void SigmoidImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Sigmoid()"; }
void SiLUImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::SiLU()"; }
void LogSigmoidImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::LogSigmoid()"; }
void SoftplusImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}
void SoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softmax(dim=" << options.dim() << ")";
}
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LogSoftmax(dim=" << options.dim() << ")";
}
void MSELossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::MSELoss()"; }
void L1LossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::L1Loss()"; }
void SmoothL1LossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::SmoothL1Loss()"; }
void NLLLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::NLLLoss()"; }
void CrossEntropyLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::CrossEntropyLoss()"; }
void BCELossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::BCELoss()"; }
void BCEWithLogitsLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::BCEWithLogitsLoss()"; }
void HuberLossImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::HuberLoss()"; }

}  // namespace kiln::nn
