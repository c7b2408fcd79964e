// prelu, gumbel_softmax and embedding_bag, as nn::functional and (PReLU, EmbeddingBag) as
// modules, with libtorch's options (layers_more.cpp).
#pragma once
#include <optional>

#include "frontend/nn/module.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

struct PReLUOptions {
  KILN_ARG(int64_t, num_parameters) = 1;
  KILN_ARG(double, init) = 0.25;
};

using EmbeddingBagMode = EnumChoice<enumtype::kSum, enumtype::kMean, enumtype::kMax>;

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  KILN_ARG(int64_t, num_embeddings);
  KILN_ARG(int64_t, embedding_dim);
  KILN_ARG(std::optional<double>, max_norm) = std::nullopt;
  KILN_ARG(double, norm_type) = 2.;
  KILN_ARG(bool, scale_grad_by_freq) = false;
  KILN_ARG(EmbeddingBagMode, mode) = kMean;
  KILN_ARG(bool, sparse) = false;
  KILN_ARG(Tensor, _weight) = {};
  KILN_ARG(bool, include_last_offset) = false;
  KILN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

namespace functional {

struct GumbelSoftmaxFuncOptions {
  KILN_ARG(double, tau) = 1.0;
  KILN_ARG(bool, hard) = false;
  KILN_ARG(int, dim) = -1;
};

struct EmbeddingBagFuncOptions {
  KILN_ARG(Tensor, offsets) = {};
  KILN_ARG(std::optional<double>, max_norm) = std::nullopt;
  KILN_ARG(double, norm_type) = 2.;
  KILN_ARG(bool, scale_grad_by_freq) = false;
  KILN_ARG(EmbeddingBagMode, mode) = kMean;
  KILN_ARG(bool, sparse) = false;
  KILN_ARG(Tensor, per_sample_weights) = {};
  KILN_ARG(bool, include_last_offset) = false;
  KILN_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// max(0, x) + weight min(0, x); weight has one element, or one per channel (axis 1).
Tensor prelu(const Tensor& input, const Tensor& weight);
// softmax((logits + g) / tau) with g Gumbel(0, 1) noise drawn from kiln's generator; hard gives
// the one-hot of its maximum in the forward pass and the soft sample's gradient.
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options = {});
// Sums, means or maxima of bags of weight's rows: input [B, L] (each row a bag) or input [N]
// with offsets [B] (bag b starts at offsets[b]); per_sample_weights (mode kSum) scale each row;
// entries equal to padding_idx are left out; an empty bag gives zeros. Reads input and offsets
// on the host (the bags' sizes depend on their values). max_norm renormalizes the rows the input
// names in weight, in place and without gradient, as libtorch; scale_grad_by_freq divides each
// entry's gradient by how often its row occurs in the input (the documented rule: libtorch 1.13's
// CPU kernel looks the count up at the wrong place, so its gradients differ where rows repeat).
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

}  // namespace functional

class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input) { return functional::prelu(input, weight); }
  void pretty_print(std::ostream& stream) const override;

  PReLUOptions options;
  Tensor weight;
};
KILN_MODULE(PReLU);

// A table [num_embeddings, embedding_dim] initialized from N(0, 1) (the padding_idx row zero).
class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  void pretty_print(std::ostream& stream) const override;

  EmbeddingBagOptions options;
  Tensor weight;
};
KILN_MODULE(EmbeddingBag);

}  // namespace kiln::nn
