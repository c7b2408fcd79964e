// nn::functional's 1-D and transposed convolutions, 1-D and adaptive pooling, channel dropout and
// interpolate: option checks over the kiln ops.
#include "frontend/nn/conv_functional.h"

#include <cmath>

#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using kiln::detail::shape_str;

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
  return kiln::conv1d(input, weight, options.bias(), options.stride(), options.padding(), options.dilation(),
                      options.groups());
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options) {
  return kiln::conv_transpose1d(input, weight, options.bias(), options.stride(), options.padding(),
                                options.output_padding(), options.groups(), options.dilation());
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options) {
  return kiln::conv_transpose2d(input, weight, options.bias(), options.stride(), options.padding(),
                                options.output_padding(), options.groups(), options.dilation());
}

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return kiln::max_pool1d(input, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                          options.ceil_mode());
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const MaxPool1dFuncOptions& options) {
  return kiln::max_pool1d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                       options.dilation(), options.ceil_mode());
}
Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& options) {
  KILN_CHECK(!options.divisor_override(), "avg_pool1d: divisor_override is not an option of 1-D average pooling");
  return kiln::avg_pool1d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                          options.count_include_pad());
}

namespace {
// The input's last D sizes, or an empty list for an input too small to have them (the op then
// reports the rank).
template <size_t D>
std::vector<int64_t> output_size_for(const Tensor& input, const ExpandingArrayWithOptionalElem<D>& size) {
  if (input.dim() < int64_t(D)) return std::vector<int64_t>(D, 1);
  return size.resolve(input.sizes());
}
}  // namespace

Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& options) {
  return kiln::adaptive_avg_pool1d(input, options.output_size());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
  return kiln::adaptive_avg_pool2d(input, output_size_for(input, options.output_size()));
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options) {
  return kiln::adaptive_max_pool1d(input, options.output_size());
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
  return kiln::adaptive_max_pool2d(input, output_size_for(input, options.output_size()));
}
Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, options));
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, options));
}

namespace {
// Channel dropout over inputs of `spatial` dimensions after channels, with an optional batch axis.
Tensor channel_dropout(const char* op, Tensor input, const DropoutFuncOptions& options, int64_t spatial) {
  const double p = options.p();
  KILN_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, op, ": expected a ", spatial + 1, "D or ",
             spatial + 2, "D input (with an optional batch dimension), got ", shape_str(input));
  KILN_CHECK(input.is_floating_point(), op, ": expected a floating point input, got ", shape_str(input));
  const bool batched = input.dim() == spatial + 2;
  Tensor out = kiln::feature_dropout(batched ? input : input.unsqueeze(0), p, options.training());
  if (!batched) out = out.squeeze(0);
  return options.inplace() && out.unsafeGetTensorImpl() != input.unsafeGetTensorImpl() ? input.copy_(out) : out;
}
}  // namespace

Tensor dropout1d(Tensor input, const Dropout1dFuncOptions& options) {
  return channel_dropout("dropout1d", std::move(input), options, 1);
}
Tensor dropout2d(Tensor input, const Dropout2dFuncOptions& options) {
  return channel_dropout("dropout2d", std::move(input), options, 2);
}
Tensor dropout3d(Tensor input, const Dropout3dFuncOptions& options) {
  return channel_dropout("dropout3d", std::move(input), options, 3);
}

Tensor interpolate(const Tensor& input, const InterpolateFuncOptions& options) {
  const std::string& mode = options.mode().name();
  const bool linear_mode = mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
  KILN_CHECK(linear_mode || !options.align_corners(),
             "interpolate: align_corners option can only be set with the "
             "interpolating modes: linear | bilinear | bicubic | trilinear (got mode ",
             mode, ")");
  KILN_CHECK(input.dim() >= 3 && input.dim() <= 5,
             "interpolate: kiln resamples 3D, 4D and 5D inputs (N, C, L or N, C, "
             "H, W or N, C, D, H, W), got ",
             shape_str(input), " for mode ", mode);
  KILN_CHECK(!options.antialias() || (input.dim() == 4 && (mode == "bilinear" || mode == "bicubic")),
             "interpolate: Anti-alias option is only supported for bilinear and bicubic modes (of 4D input), got mode ",
             mode, " and input ", shape_str(input));
  const size_t spatial = size_t(input.dim() - 2);
  const auto& size = options.size();
  const auto& scale_factor = options.scale_factor();
  KILN_CHECK(size || scale_factor, "interpolate: either size or scale_factor should be defined");
  KILN_CHECK(!size || !scale_factor, "interpolate: only one of size or scale_factor should be defined");
  KILN_CHECK(!size || size->size() == spatial, "interpolate: size shape must match input shape. Input is ", spatial,
             "D, size is ", size ? size->size() : 0);
  KILN_CHECK(!scale_factor || scale_factor->size() == spatial,
             "interpolate: scale_factor shape must match input "
             "shape. Input is ",
             spatial, "D, scale_factor size is ", scale_factor ? scale_factor->size() : 0);
  std::vector<int64_t> output_size;
  std::vector<std::optional<double>> scales(spatial);
  if (size) {
    output_size = *size;
  } else {
    for (size_t i = 0; i < spatial; ++i)
      output_size.push_back(int64_t(std::floor(double(input.size(2 + i)) * (*scale_factor)[i])));
    if (!options.recompute_scale_factor().value_or(false))
      for (size_t i = 0; i < spatial; ++i) scales[i] = (*scale_factor)[i];
  }
  const bool align_corners = options.align_corners().value_or(false);
  if (mode == "nearest" && spatial == 3)
    return kiln::upsample_nearest3d(input, output_size, scales[0], scales[1], scales[2]);
  if (mode == "nearest")
    return spatial == 1 ? kiln::upsample_nearest1d(input, output_size, scales[0])
                        : kiln::upsample_nearest2d(input, output_size, scales[0], scales[1]);
  if (mode == "nearest-exact" && spatial == 3)
    return kiln::_upsample_nearest_exact3d(input, output_size, scales[0], scales[1], scales[2]);
  if (mode == "nearest-exact")
    return spatial == 1 ? kiln::_upsample_nearest_exact1d(input, output_size, scales[0])
                        : kiln::_upsample_nearest_exact2d(input, output_size, scales[0], scales[1]);
  if (mode == "area")
    return spatial == 1   ? kiln::adaptive_avg_pool1d(input, output_size)
           : spatial == 2 ? kiln::adaptive_avg_pool2d(input, output_size)
                          : kiln::adaptive_avg_pool3d(input, output_size);
  KILN_CHECK(spatial < 3 || mode == "trilinear", "interpolate: mode ", mode, " of 5D input ", shape_str(input),
             " is not supported by kiln (nearest, nearest-exact, area and trilinear are)");
  KILN_CHECK(mode != "linear" || spatial == 1, "interpolate: got ", input.dim(), "D input ", shape_str(input),
             ", but linear mode needs 3D input");
  KILN_CHECK(mode != "bilinear" || spatial == 2, "interpolate: got ", input.dim(), "D input ", shape_str(input),
             ", but bilinear mode needs 4D input");
  KILN_CHECK(mode != "bicubic" || spatial == 2, "interpolate: got ", input.dim(), "D input ", shape_str(input),
             ", but bicubic mode needs 4D input");
  KILN_CHECK(mode != "trilinear" || spatial == 3, "interpolate: got ", input.dim(), "D input ", shape_str(input),
             ", but trilinear mode needs 5D input");
  if (mode == "bicubic")
    return options.antialias() ? kiln::_upsample_bicubic2d_aa(input, output_size, align_corners, scales[0], scales[1])
                               : kiln::upsample_bicubic2d(input, output_size, align_corners, scales[0], scales[1]);
  if (mode == "bilinear" && options.antialias())
    return kiln::_upsample_bilinear2d_aa(input, output_size, align_corners, scales[0], scales[1]);
  if (mode == "trilinear")
    return kiln::upsample_trilinear3d(input, output_size, align_corners, scales[0], scales[1], scales[2]);
  KILN_CHECK(mode == "linear" || mode == "bilinear", "interpolate: mode ", mode, " is not supported by kiln");
  return spatial == 1 ? kiln::upsample_linear1d(input, output_size, align_corners, scales[0])
                      : kiln::upsample_bilinear2d(input, output_size, align_corners, scales[0], scales[1]);
}

}  // namespace kiln::nn::functional
