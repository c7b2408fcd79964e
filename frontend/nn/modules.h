// The layers, activations and losses as modules: `nn::Linear(3, 2)`, `nn::LayerNorm(...)`,
// `nn::ReLU()`, `nn::CrossEntropyLoss()`, each a ModuleHolder over its `...Impl`, as in libtorch.
#pragma once
#include "frontend/nn/functional.h"
#include "frontend/nn/module.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

// --- layers ---

// y = x W^T + b, W [out, in]. Initialized as libtorch 1.13: W ~ kaiming_uniform(a = sqrt(5)),
// b ~ U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  LinearOptions options;
  Tensor weight, bias;
};
KILN_MODULE(Linear);

// Normalizes over the trailing `normalized_shape`; weight starts at ones, bias at zeros.
class LayerNormImpl : public Module {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  LayerNormOptions options;
  Tensor weight, bias;
};
KILN_MODULE(LayerNorm);

// 2-D convolution over [N, C, H, W] (or [C, H, W]); weight [out, in / groups, kH, kW]. Initialized
// as libtorch 1.13: kaiming_uniform(a = sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  Conv2dOptions options;
  Tensor weight, bias;
};
KILN_MODULE(Conv2d);

class MaxPool2dImpl : public Module {
 public:
  MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::max_pool2d(input, options); }
  void pretty_print(std::ostream& stream) const override;
  MaxPool2dOptions options;
};
KILN_MODULE(MaxPool2d);

class AvgPool2dImpl : public Module {
 public:
  AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::avg_pool2d(input, options); }
  void pretty_print(std::ostream& stream) const override;
  AvgPool2dOptions options;
};
KILN_MODULE(AvgPool2d);

// Batch normalization over the channel axis (1). Training normalizes with the batch's statistics
// and updates the running ones (buffers, saved in the state dict); evaluation uses the running
// ones. BatchNorm1d takes [N, C] or [N, C, L], BatchNorm2d [N, C, H, W].
class BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const BatchNormOptions& options, const char* name, int64_t min_dim, int64_t max_dim);
  void reset();
  void reset_parameters();
  void reset_running_stats();
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  const char* name_;
  int64_t min_dim_, max_dim_;
};

class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm1d", 2, 3) {}
  explicit BatchNorm1dImpl(int64_t num_features) : BatchNorm1dImpl(BatchNormOptions(num_features)) {}
};
KILN_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormImplBase(options, "BatchNorm2d", 4, 4) {}
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNormOptions(num_features)) {}
};
KILN_MODULE(BatchNorm2d);

// A lookup table [num_embeddings, embedding_dim], initialized from N(0, 1).
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset();
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  void pretty_print(std::ostream& stream) const override;

  EmbeddingOptions options;
  Tensor weight;
};
KILN_MODULE(Embedding);

// Active only in training mode (see Module::train / eval).
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  Tensor forward(Tensor input);
  void pretty_print(std::ostream& stream) const override;

  DropoutOptions options;
};
KILN_MODULE(Dropout);

class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  FlattenOptions options;
};
KILN_MODULE(Flatten);

class IdentityImpl : public Module {
 public:
  Tensor forward(const Tensor& input) { return input; }
  void pretty_print(std::ostream& stream) const override;
};
KILN_MODULE(Identity);

// --- activations ---

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) { return functional::relu(std::move(input), options); }
  void pretty_print(std::ostream& stream) const override;
  ReLUOptions options;
};
KILN_MODULE(ReLU);

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) { return functional::leaky_relu(std::move(input), options); }
  void pretty_print(std::ostream& stream) const override;
  LeakyReLUOptions options;
};
KILN_MODULE(LeakyReLU);

class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::gelu(input, options); }
  void pretty_print(std::ostream& stream) const override;
  GELUOptions options;
};
KILN_MODULE(GELU);

// Activations without options.
#define KILN_SIMPLE_ACTIVATION(Name, fn)                                  \
  class Name##Impl : public Module {                                      \
   public:                                                                \
    Tensor forward(const Tensor& input) { return functional::fn(input); } \
    void pretty_print(std::ostream& stream) const override;               \
  };                                                                      \
  KILN_MODULE(Name)
KILN_SIMPLE_ACTIVATION(Tanh, tanh);
KILN_SIMPLE_ACTIVATION(Sigmoid, sigmoid);
KILN_SIMPLE_ACTIVATION(SiLU, silu);
KILN_SIMPLE_ACTIVATION(LogSigmoid, logsigmoid);

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::softplus(input, options); }
  void pretty_print(std::ostream& stream) const override;
  SoftplusOptions options;
};
KILN_MODULE(Softplus);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim) : options(dim) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::softmax(input, options.dim()); }
  void pretty_print(std::ostream& stream) const override;
  SoftmaxOptions options;
};
KILN_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : options(dim) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::log_softmax(input, options.dim()); }
  void pretty_print(std::ostream& stream) const override;
  LogSoftmaxOptions options;
};
KILN_MODULE(LogSoftmax);

// --- losses: forward(input, target) ---

#define KILN_LOSS_MODULE(Name, Options, fn)                                                                      \
  class Name##Impl : public Module {                                                                             \
   public:                                                                                                       \
    explicit Name##Impl(const Options& options = {}) : options(options) {}                                       \
    Tensor forward(const Tensor& input, const Tensor& target) { return functional::fn(input, target, options); } \
    void pretty_print(std::ostream& stream) const override;                                                      \
    Options options;                                                                                             \
  };                                                                                                             \
  KILN_MODULE(Name)
KILN_LOSS_MODULE(MSELoss, MSELossOptions, mse_loss);
KILN_LOSS_MODULE(L1Loss, L1LossOptions, l1_loss);
KILN_LOSS_MODULE(SmoothL1Loss, SmoothL1LossOptions, smooth_l1_loss);
KILN_LOSS_MODULE(NLLLoss, NLLLossOptions, nll_loss);
KILN_LOSS_MODULE(CrossEntropyLoss, CrossEntropyLossOptions, cross_entropy);
KILN_LOSS_MODULE(BCELoss, BCELossOptions, binary_cross_entropy);
KILN_LOSS_MODULE(BCEWithLogitsLoss, BCEWithLogitsLossOptions, binary_cross_entropy_with_logits);
KILN_LOSS_MODULE(HuberLoss, HuberLossOptions, huber_loss);
#undef KILN_LOSS_MODULE

}  // namespace kiln::nn
