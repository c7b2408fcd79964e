// nn::functional (`namespace F = torch::nn::functional;`): the stateless forms of the layers,
// activations and losses, taking libtorch's option objects.
#pragma once
#include "frontend/nn/conv_functional.h"
#include "frontend/nn/functional_more.h"
#include "frontend/nn/options.h"
#include "frontend/tensor.h"

namespace kiln::nn::functional {

// --- activations ---
Tensor relu(Tensor input, const ReLUFuncOptions& options = {});
Tensor leaky_relu(Tensor input, const LeakyReLUFuncOptions& options = {});
Tensor gelu(const Tensor& input, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& input);
Tensor sigmoid(const Tensor& input);
Tensor tanh(const Tensor& input);
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options = {});
Tensor logsigmoid(const Tensor& input);
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

// --- layers ---
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// Normalizes over the trailing dimensions `normalized_shape` with the biased variance, then
// scales and shifts by weight and bias when given.
Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
// Zeroes each element with probability p while training and scales the rest by 1 / (1 - p).
Tensor dropout(Tensor input, const DropoutFuncOptions& options = {});
Tensor embedding(const Tensor& input, const Tensor& weight);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options = {});
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
// Training mode normalizes with the batch's statistics and updates running_mean/var in place.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options = {});
// pad = {left, right[, top, bottom[, front, back]]} from the last dimension back; mode kConstant
// (with value), kReflect, kReplicate or kCircular.
Tensor pad(const Tensor& input, const PadFuncOptions& options);
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

// --- losses ---
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
// libtorch 1.13 takes beta as a trailing argument here and ignores options.beta(); kiln honours
// both: a beta argument other than 1 wins, otherwise options.beta() applies.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {},
                      double beta = 1.0);
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});

}  // namespace kiln::nn::functional

namespace kiln {
// torch::dropout(input, p, train), the ATen form libtorch's tutorials call.
Tensor dropout(const Tensor& input, double p, bool train);
}  // namespace kiln
