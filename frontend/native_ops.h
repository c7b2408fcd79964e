// Internal to frontend/: eager mode's whole-op kernels (codegen/native_kernels.h). With
// KILN_LAZY=0, layer_norm, softmax, log_softmax, gelu, cross_entropy and the optimizers' updates of
// float32 and float64 host tensors run as libtorch runs them: one precompiled kernel per op
// forward and one backward, saving per-row statistics instead of the composite's intermediates.
// Lazy mode never calls them (it fuses the composites). Each function returns nothing (or false)
// where its case is not one the kernels take (another dtype or device, weights, label smoothing),
// and the caller runs its composite.
//
// Gradients: a backward without create_graph runs the backward kernel; with create_graph it is
// recomputed from the composite (so second derivatives are the composite's).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/native_kernels.h"
#include "frontend/tensor.h"

namespace kiln::detail::native {

// Whether the native kernels serve now: eager mode, outside a composite's recomputation.
bool enabled();

// layer_norm over the trailing `normalized_dims` dims of x; w and b may be undefined.
std::optional<Tensor> layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& w, const Tensor& b,
                                 double eps);
// softmax (log: log_softmax) of a floating tensor along `dim` (already wrapped).
std::optional<Tensor> softmax(const Tensor& x, int64_t dim, bool log);
// A convolution's columns (codegen::native::Im2col) of x [N, C, H, W], shaped `sizes` (the
// layout [C, KH, KW, N, OH, OW] seen as the caller's matmul operand). `composite` makes the same
// columns from kiln ops: the backward recomputes it where create_graph asks for a graph.
std::optional<Tensor> im2col(const Tensor& x, const codegen::native::Im2col& args, Shape sizes,
                             std::function<Tensor(const Tensor&)> composite);
// batch_norm in training of x [N, C, ...] (running statistics updated, where defined, as the
// composite updates them); `composite` computes it from (x, weight, bias) without them.
using BatchNormComposite = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
std::optional<Tensor> batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                 const Tensor& running_var, double momentum, double eps, BatchNormComposite composite);
// max_pool2d of x [N, C, H, W] (args.planes = N * C); `composite` as for im2col.
std::optional<Tensor> max_pool2d(const Tensor& x, const codegen::native::Pool2d& args,
                                 std::function<Tensor(const Tensor&)> composite);
// Average pooling of x [N, C, H, W] over `windows` (codegen::native::AvgPool2d's: output row i
// averages input rows [rows[2i], rows[2i + 1]), column j columns [cols[2j], cols[2j + 1]), over
// divisor[i * OW + j]); `name` is the backward node's; `composite` as for im2col.
struct AvgPoolWindows {
  std::vector<int64_t> rows, cols;
  std::vector<double> divisor;
};
std::optional<Tensor> avg_pool2d(const Tensor& x, AvgPoolWindows windows, const char* name,
                                 std::function<Tensor(const Tensor&)> composite);
// gelu (tanh_form: approximate="tanh") of a floating tensor.
std::optional<Tensor> gelu(const Tensor& x, bool tanh_form);
// cross_entropy of [N, C] logits and [N] class indices, no class weights or label smoothing;
// `reduction` is "none", "mean" or "sum" (checked by the caller).
std::optional<Tensor> cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                                    int64_t ignore_index);

// Updates p, exp_avg and exp_avg_sq in place (their versions bumped) by one Adam step.
bool adam_step(Tensor& p, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               const codegen::native::AdamArgs& args);
// One SGD step in place; `momentum_buffer` undefined: no momentum.
bool sgd_step(Tensor& p, const Tensor& grad, Tensor& momentum_buffer, const codegen::native::SgdArgs& args);

}  // namespace kiln::detail::native
