// Free functions over tensors, with libtorch's names and signatures.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "frontend/indexing.h"
#include "frontend/math_ops.h"
#include "frontend/nn/enum.h"
#include "frontend/scan_sort.h"
#include "frontend/tensor.h"
#include "frontend/tensor_api.h"
#include "frontend/tensor_data.h"

namespace kiln {

// --- creation ---
Tensor scalar_tensor(const Scalar& s, const TensorOptions& o = {});
Tensor zeros(IntArrayRef size, const TensorOptions& o = {});
Tensor ones(IntArrayRef size, const TensorOptions& o = {});
Tensor full(IntArrayRef size, const Scalar& value, const TensorOptions& o = {});
Tensor empty(IntArrayRef size, const TensorOptions& o = {});
Tensor arange(const Scalar& end, const TensorOptions& o = {});
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o = {});
Tensor eye(int64_t n, const TensorOptions& o = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& o = {});
Tensor rand(IntArrayRef size, const TensorOptions& o = {});
Tensor randn(IntArrayRef size, const TensorOptions& o = {});
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o = kLong);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o = kLong);
Tensor randperm(int64_t n, const TensorOptions& o = kLong);
Tensor zeros_like(const Tensor& t, const TensorOptions& o = {});
Tensor ones_like(const Tensor& t, const TensorOptions& o = {});
Tensor full_like(const Tensor& t, const Scalar& value, const TensorOptions& o = {});
Tensor empty_like(const Tensor& t, const TensorOptions& o = {});
Tensor rand_like(const Tensor& t, const TensorOptions& o = {});
// 1 with the given probability, else 0: per element from a tensor of probabilities, or p for
// every element of a tensor shaped as self (libtorch's draws).
Tensor bernoulli(const Tensor& probabilities);
Tensor bernoulli(const Tensor& self, double p);
Tensor randn_like(const Tensor& t, const TensorOptions& o = {});
// A tensor that is the caller's memory, as libtorch's: kernels read it when they run, so they see
// the caller's writes made before (an op recorded before a write may see it too, unlike in
// libtorch, unless the program synced or read a value in between); an in-place op's result is in
// the memory after the next flush (kiln::sync(), or reading a value that needs computing; at once
// with KILN_LAZY=0), over what the caller wrote there since the op. The memory must stay valid
// while a tensor over it lives; `deleter` is called when the last one goes (ops recorded over it
// that have not run yet read a copy then).
using Deleter = std::function<void(void*)>;
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o = {});
Tensor from_blob(void* data, IntArrayRef sizes, const Deleter& deleter, const TensorOptions& o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const Deleter& deleter,
                 const TensorOptions& o = {});
void manual_seed(uint64_t seed);

// --- elementwise ---
#define KILN_UNARY(name) Tensor name(const Tensor& x);
#define KILN_BINARY(name)                        \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, const Scalar& b);
#include "frontend/elementwise_ops.def"
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor pow(const Tensor& x, const Tensor& e);
Tensor pow(const Tensor& x, const Scalar& e);
Tensor pow(const Scalar& x, const Tensor& e);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
// rounding_mode "trunc" or "floor" (libtorch 1.13's floor division: Python's //), or none.
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> rounding_mode);
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
#define KILN_INTEGER_BINARY(name, op)            \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, const Scalar& b); \
  Tensor name(const Scalar& a, const Tensor& b);
#define KILN_INTEGER_UNARY(name, op) Tensor name(const Tensor& x);
#include "frontend/integer_ops.def"
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor addcmul(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value = 1);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b);

// --- reductions ---
Tensor sum(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& x, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor max(const Tensor& x);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// As Tensor::var: var(x, false) takes the flag, var(x, 1) or var(x, {1}) a dim.
Tensor var(const Tensor& x, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
template <typename Bool, typename = std::enable_if_t<std::is_same_v<Bool, bool>>>
Tensor var(const Tensor& x, Bool unbiased) {
  return var(x, IntArrayRef{}, unbiased);
}
Tensor std(const Tensor& x, IntArrayRef dims = {}, bool unbiased = true, bool keepdim = false);
template <typename Bool, typename = std::enable_if_t<std::is_same_v<Bool, bool>>>
Tensor std(const Tensor& x, Bool unbiased) {
  return std(x, IntArrayRef{}, unbiased);
}
Tensor norm(const Tensor& x, const Scalar& p = 2);
Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dims, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// --- shape ---
Tensor reshape(const Tensor& x, IntArrayRef shape);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor permute(const Tensor& x, IntArrayRef dims);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor cat(const TensorList& tensors, int64_t dim = 0);
Tensor stack(const TensorList& tensors, int64_t dim = 0);
std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b);
// The dtype an elementwise op of these operands computes in, as libtorch's result_type
// (promote_types and can_cast are in runtime/dtype.h).
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& b);
ScalarType result_type(const Scalar& a, const Tensor& b);
ScalarType result_type(const Scalar& a, const Scalar& b);

// --- linear algebra and indexing ---
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor one_hot(const Tensor& labels, int64_t num_classes = -1);

// --- convolution, pooling, normalization (conv.cpp; also in nn::functional) ---
// Pads the last one or two dimensions: pad = {left, right[, top, bottom]}.
Tensor constant_pad_nd(const Tensor& x, IntArrayRef pad, const Scalar& value = 0);
// input [N, C, H, W] or [C, H, W], weight [O, C / groups, kH, kW]; sizes given as one int or two.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// stride {} means the kernel size, as in PyTorch.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// input [N, C, L] or [C, L], weight [O, C / groups, kW] (conv_transpose.cpp).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// input [N, C, H, W] or [C, H, W], weight [C, O / groups, kH, kW]; libtorch's argument order
// (groups before dilation). The output is (in - 1) * stride - 2 * padding + dilation * (k - 1) +
// output_padding + 1 per spatial dimension.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// input [N, C, L] or [C, L], weight [C, O / groups, kW].
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// torch::pad: mode "constant" (with value, default 0), "reflect", "replicate" or "circular";
// pad = {left, right[, top, bottom[, front, back]]} from the last dimension back.
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode = "constant",
           std::optional<double> value = std::nullopt);
// 1-D pooling over [N, C, L] or [C, L] (pooling.cpp); stride {} means the kernel size.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
// The maxima and their positions along L (int64), the first maximum of each window.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
// Adaptive pooling: output cell i covers input [floor(i * in / out), ceil((i + 1) * in / out)).
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
// The maxima and their flat positions in the input's spatial dimensions (int64), as libtorch.
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
// Zeroes whole channels (axis 1 of [N, C, ...]) with probability p while training, scaling the rest
// by 1 / (1 - p); ATen's name for dropout2d's computation.
Tensor feature_dropout(const Tensor& input, double p, bool train);
// ATen's resampling ops over [N, C, L] / [N, C, H, W] (upsample.cpp); a scale, when given, is
// output / input as interpolate's scale_factor, and sets the source positions as in libtorch.
Tensor upsample_nearest1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales = std::nullopt);
Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
Tensor upsample_linear1d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                         std::optional<double> scales = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt,
                           std::optional<double> scales_w = std::nullopt);
// Bicubic (libtorch's cubic convolution, A = -0.75, taps clamped at the border) over [N, C, H, W];
// trilinear and nearest over [N, C, D, H, W].
Tensor upsample_bicubic2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
Tensor upsample_trilinear3d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d = std::nullopt,
                            std::optional<double> scales_h = std::nullopt,
                            std::optional<double> scales_w = std::nullopt);
Tensor upsample_nearest3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d = std::nullopt,
                          std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
// nearest-exact: source floor((dst + 0.5) * in / out), interpolate's "nearest-exact" mode.
Tensor _upsample_nearest_exact1d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales = std::nullopt);
Tensor _upsample_nearest_exact2d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
Tensor _upsample_nearest_exact3d(const Tensor& input, IntArrayRef output_size,
                                 std::optional<double> scales_d = std::nullopt,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
// Antialiased (interpolate's antialias=true): each output averages the input under a triangle
// (bilinear) or cubic (bicubic, A = -0.5) filter stretched by the downscale factor, as libtorch's
// separable CPU kernel (PIL's resampling); upscaling keeps the filter's own width.
Tensor _upsample_bilinear2d_aa(const Tensor& input, IntArrayRef output_size, bool align_corners,
                               std::optional<double> scales_h = std::nullopt,
                               std::optional<double> scales_w = std::nullopt);
Tensor _upsample_bicubic2d_aa(const Tensor& input, IntArrayRef output_size, bool align_corners,
                              std::optional<double> scales_h = std::nullopt,
                              std::optional<double> scales_w = std::nullopt);
// Normalizes over every axis but 1 (channels). Training uses the batch's statistics and, when
// running_mean/var are given, updates them in place with `momentum` (unbiased variance).
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps);

// --- losses, with ATen's signatures (`torch::nll_loss(x, y, weight, torch::Reduction::Sum)`);
// nn::functional's option forms call these. Composites of kiln ops, so their gradients come from
// the ops they are made of. ---
Tensor mse_loss(const Tensor& input, const Tensor& target, const Reduction& reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, const Reduction& reduction = Reduction::Mean);
// Quadratic below beta, linear above (beta 0: l1_loss).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const Reduction& reduction = Reduction::Mean,
                      double beta = 1.0);
// Quadratic below delta, linear above: smooth_l1_loss times delta.
Tensor huber_loss(const Tensor& input, const Tensor& target, const Reduction& reduction = Reduction::Mean,
                  double delta = 1.0);
// log_probs [N, C] (or [C], or [N, C, d1, ...]); target of class indices, int64, shaped as
// log_probs without its class dimension. `weight` (optional, [C]) scales each class. Targets
// equal to ignore_index add nothing, and "mean" divides by the weight of the rest.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = {},
                const Reduction& reduction = Reduction::Mean, int64_t ignore_index = -100);
// log_softmax over the class dimension, then nll_loss; the target is either class indices (as
// nll_loss) or class probabilities of the input's shape. label_smoothing mixes the target with
// the uniform distribution.
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& target, const Tensor& weight = {},
                          const Reduction& reduction = Reduction::Mean, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
// kiln's shorthand for cross_entropy_loss without class weights.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Reduction& reduction = Reduction::Mean,
                     double label_smoothing = 0.0);
// -(t log x + (1 - t) log(1 - x)) with each log clamped to >= -100 (as libtorch), times weight.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            const Reduction& reduction = Reduction::Mean);
// binary_cross_entropy of sigmoid(input), computed stably from the logits; pos_weight ([C],
// broadcast along the last dim) weighs the positive term, weight the whole.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                                        const Tensor& pos_weight = {}, const Reduction& reduction = Reduction::Mean);
// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as libtorch).
Tensor softplus(const Tensor& x, const Scalar& beta = 1, const Scalar& threshold = 20);
// log(sigmoid(x)), stable for large |x|.
Tensor log_sigmoid(const Tensor& x);

}  // namespace kiln
