// Resampling (nearest, nearest-exact, linear, bilinear), written from primitives: one spatial
// axis at a time, an index_select of each output position's source (nearest), or the weighted sum
// of two index_selects (linear). The tables follow libtorch's CPU kernels, in the input's
// precision (float for float32), so positions on a boundary round as libtorch's do; bilinear
// resamples the width first, then the height, the order libtorch's kernel sums in.
#include <cmath>

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

using detail::shape_str;

namespace {

// libtorch's compute_scales_value: 1 / scale when a scale is given, else in / out.
template <typename T>
T scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? T(1.0 / *scale) : T(in) / T(out);
}

std::vector<int64_t> nearest_table(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  std::vector<int64_t> table(out);
  const float s = scale_value<float>(scale, in, out);
  for (int64_t i = 0; i < out; ++i) {
    if (!exact && out == in)
      table[i] = i;
    else if (!exact && out == 2 * in)
      table[i] = i >> 1;
    else
      table[i] = std::min<int64_t>(int64_t(std::floor(exact ? float((i + 0.5) * s) : i * s)), in - 1);
  }
  return table;
}

struct LinearTable {
  std::vector<int64_t> low, high;
  std::vector<double> low_weight, high_weight;
};

template <typename T>
LinearTable linear_table(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  const T s = align_corners ? (out > 1 ? T(in - 1) / T(out - 1) : T(0)) : scale_value<T>(scale, in, out);
  LinearTable t;
  for (int64_t i = 0; i < out; ++i) {
    T src = align_corners ? s * T(i) : s * (T(i) + T(0.5)) - T(0.5);
    if (src < 0) src = 0;
    const int64_t low = int64_t(src);
    const T lambda = std::min(std::max(src - T(low), T(0)), T(1));
    t.low.push_back(low);
    t.high.push_back(low + (low < in - 1 ? 1 : 0));
    t.low_weight.push_back(double(T(1) - lambda));
    t.high_weight.push_back(double(lambda));
  }
  return t;
}

// x resampled along `dim` by the table.
Tensor resample_linear(const Tensor& x, int64_t dim, const LinearTable& t) {
  Shape weight_shape(x.dim() - dim, 1);
  weight_shape[0] = int64_t(t.low.size());
  const Device on = x.device();
  Tensor low_weight = tensor(t.low_weight, x.dtype()).to(on).view(weight_shape);
  Tensor high_weight = tensor(t.high_weight, x.dtype()).to(on).view(weight_shape);
  return index_select(x, dim, tensor(t.low).to(on)) * low_weight +
         index_select(x, dim, tensor(t.high).to(on)) * high_weight;
}

Tensor resample(const char* op, const Tensor& input, IntArrayRef output_size, int64_t spatial,
                const std::vector<std::optional<double>>& scales, const std::string& mode, bool align_corners) {
  KILN_CHECK(input.dim() == spatial + 2, op, ": expected a ", spatial + 2, "D input (N, C, spatial...), got ",
             shape_str(input));
  KILN_CHECK(input.is_floating_point(), op, ": expected a floating point input, got ", shape_str(input));
  KILN_CHECK(int64_t(output_size.size()) == spatial, op, ": output_size must have ", spatial, " elements, got ",
             output_size.vec());
  for (int64_t i = 0; i < spatial; ++i)
    KILN_CHECK(output_size[i] > 0 && input.size(2 + i) > 0, op, ": input ", shape_str(input), " and output size ",
               output_size.vec(), " should be greater than 0");
  Tensor out = input;
  for (int64_t i = spatial - 1; i >= 0; --i) {  // the last axis first, as libtorch sums
    const int64_t dim = 2 + i, in = input.size(dim), size = output_size[i];
    if (mode == "nearest" || mode == "nearest-exact") {
      if (size != in || mode == "nearest-exact")
        out = index_select(out, dim,
                           tensor(nearest_table(in, size, scales[i], mode == "nearest-exact")).to(out.device()));
    } else {
      out = resample_linear(out, dim,
                            input.dtype() == kFloat64 ? linear_table<double>(in, size, align_corners, scales[i])
                                                      : linear_table<float>(in, size, align_corners, scales[i]));
    }
  }
  return out;
}

}  // namespace

Tensor upsample_nearest1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales) {
  Tensor out = resample("upsample_nearest1d", input, output_size, 1, {scales}, "nearest", false);
  return detail::named(out, "UpsampleNearest1DBackward0", {input});
}

Tensor upsample_nearest2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  Tensor out = resample("upsample_nearest2d", input, output_size, 2, {scales_h, scales_w}, "nearest", false);
  return detail::named(out, "UpsampleNearest2DBackward0", {input});
}

Tensor upsample_linear1d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                         std::optional<double> scales) {
  Tensor out = resample("upsample_linear1d", input, output_size, 1, {scales}, "linear", align_corners);
  return detail::named(out, "UpsampleLinear1DBackward0", {input});
}

Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out = resample("upsample_bilinear2d", input, output_size, 2, {scales_h, scales_w}, "linear", align_corners);
  return detail::named(out, "UpsampleBilinear2DBackward0", {input});
}

Tensor _upsample_nearest_exact1d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales) {
  Tensor out = resample("_upsample_nearest_exact1d", input, output_size, 1, {scales}, "nearest-exact", false);
  return detail::named(out, "UpsampleNearestExact1DBackward0", {input});
}

Tensor _upsample_nearest_exact2d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_h,
                                 std::optional<double> scales_w) {
  Tensor out =
      resample("_upsample_nearest_exact2d", input, output_size, 2, {scales_h, scales_w}, "nearest-exact", false);
  return detail::named(out, "UpsampleNearestExact2DBackward0", {input});
}

}  // namespace kiln
