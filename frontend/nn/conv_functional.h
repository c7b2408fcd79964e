// nn::functional's 1-D and transposed convolutions, 1-D and adaptive pooling, channel dropout and
// interpolate (included by functional.h).
#pragma once
#include <tuple>

#include "frontend/nn/conv_options.h"
#include "frontend/tensor.h"

namespace kiln::nn::functional {

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options = {});
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options = {});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options = {});

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options);
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options);
Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options);

// Zero whole channels (axis 1; the input may lack the batch axis) with probability p while
// training and scale the rest by 1 / (1 - p). dropout1d takes [N, C, L] or [C, L], dropout2d
// [N, C, H, W] or [C, H, W], dropout3d [N, C, D, H, W] or [C, D, H, W].
Tensor dropout1d(Tensor input, const Dropout1dFuncOptions& options = {});
Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options = {});
Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options = {});

// Resamples [N, C, L] (nearest, nearest-exact, linear, area) or [N, C, H, W] (nearest,
// nearest-exact, bilinear, area) to `size` or to floor(in * scale_factor).
Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options = {});

}  // namespace kiln::nn::functional
