// Resampling (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, antialiased), written from
// primitives: one spatial axis at a time, an index_select of each output position's source
// (nearest), the weighted sum of two (linear) or four (cubic) index_selects, or a GEMM with the
// [out, in] filter weights (antialiased, whose windows grow with the downscale factor). The tables follow libtorch's
// CPU kernels, in the input's precision (float for float32), so positions on a boundary round as libtorch's do;
// bilinear resamples the width first, then the height, the order libtorch's kernel sums in.
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

// libtorch's bicubic: four taps at floor(src) - 1 ... floor(src) + 2, clamped to the input (border
// replication), weighted by Keys' cubic convolution with A = -0.75; src is not clamped at 0.
struct CubicTable {
  std::vector<int64_t> taps[4];
  std::vector<double> weights[4];
};

template <typename T>
CubicTable cubic_table(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  const T s = align_corners ? (out > 1 ? T(in - 1) / T(out - 1) : T(0)) : scale_value<T>(scale, in, out);
  const T a = T(-0.75);
  auto near = [a](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  CubicTable t;
  for (int64_t i = 0; i < out; ++i) {
    const T src = align_corners ? s * T(i) : s * (T(i) + T(0.5)) - T(0.5);
    const int64_t floor_src = int64_t(std::floor(src));
    const T frac = src - T(floor_src);
    const T w[4] = {far(frac + 1), near(frac), near(1 - frac), far(2 - frac)};
    for (int k = 0; k < 4; ++k) {
      t.taps[k].push_back(std::min(std::max<int64_t>(floor_src - 1 + k, 0), in - 1));
      t.weights[k].push_back(double(w[k]));
    }
  }
  return t;
}

// libtorch's antialiased weights (_compute_weights_aa): output i averages the inputs whose centres
// lie within `support` of scale * (i + 0.5), each weighted by the filter at its distance (in
// output pixels when downscaling), normalized to sum to 1. Row-major [out, in].
template <typename T>
std::vector<double> antialias_weights(int64_t in, int64_t out, bool align_corners, std::optional<double> scale_given,
                                      bool cubic) {
  const T scale = align_corners ? (out > 1 ? T(in - 1) / T(out - 1) : T(0)) : scale_value<T>(scale_given, in, out);
  const T half_width = cubic ? T(2) : T(1);
  const T support = scale >= T(1) ? half_width * scale : half_width;
  const T inverse_scale = scale >= T(1) ? T(1) / scale : T(1);
  auto filter = [cubic](T x) {
    x = std::abs(x);
    if (!cubic) return x < T(1) ? T(1) - x : T(0);
    const T a = T(-0.5);
    if (x < T(1)) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < T(2)) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return T(0);
  };
  std::vector<double> weights(size_t(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const T center = scale * (T(i) + T(0.5));
    const int64_t first = std::max<int64_t>(int64_t(center - support + T(0.5)), 0);
    const int64_t end = std::min<int64_t>(int64_t(center + support + T(0.5)), in);
    std::vector<T> w;
    T total = 0;
    for (int64_t j = first; j < end; ++j) {
      w.push_back(filter((T(j) - center + T(0.5)) * inverse_scale));
      total += w.back();
    }
    for (int64_t j = first; j < end; ++j)
      weights[size_t(i * in + j)] = double(total != T(0) ? w[size_t(j - first)] / total : w[size_t(j - first)]);
  }
  return weights;
}

// x resampled along `dim` by [out, in] weights.
Tensor resample_by_weights(const Tensor& x, int64_t dim, const std::vector<double>& weights, int64_t out) {
  const int64_t in = x.size(dim);
  const Tensor w = tensor(weights, x.dtype()).to(x.device()).view({out, in});
  return x.transpose(dim, -1).matmul(w.t()).transpose(dim, -1);
}

Tensor resample_cubic(const Tensor& x, int64_t dim, const CubicTable& t) {
  Shape weight_shape(x.dim() - dim, 1);
  weight_shape[0] = int64_t(t.taps[0].size());
  const Device on = x.device();
  Tensor out;
  for (int k = 0; k < 4; ++k) {
    Tensor term =
        index_select(x, dim, tensor(t.taps[k]).to(on)) * tensor(t.weights[k], x.dtype()).to(on).view(weight_shape);
    out = k == 0 ? term : out + term;
  }
  return out;
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
    } else if (mode == "linear-antialias" || mode == "cubic-antialias") {
      const bool cubic = mode == "cubic-antialias";
      out = resample_by_weights(out, dim,
                                input.dtype() == kFloat64
                                    ? antialias_weights<double>(in, size, align_corners, scales[i], cubic)
                                    : antialias_weights<float>(in, size, align_corners, scales[i], cubic),
                                size);
    } else if (mode == "cubic") {
      out = resample_cubic(out, dim,
                           input.dtype() == kFloat64 ? cubic_table<double>(in, size, align_corners, scales[i])
                                                     : cubic_table<float>(in, size, align_corners, scales[i]));
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

Tensor upsample_bicubic2d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out = resample("upsample_bicubic2d", input, output_size, 2, {scales_h, scales_w}, "cubic", align_corners);
  return detail::named(out, "UpsampleBicubic2DBackward0", {input});
}

Tensor _upsample_bilinear2d_aa(const Tensor& input, IntArrayRef output_size, bool align_corners,
                               std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out = resample("_upsample_bilinear2d_aa", input, output_size, 2, {scales_h, scales_w}, "linear-antialias",
                        align_corners);
  return detail::named(out, "UpsampleBilinear2DAaBackward0", {input});
}

Tensor _upsample_bicubic2d_aa(const Tensor& input, IntArrayRef output_size, bool align_corners,
                              std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out =
      resample("_upsample_bicubic2d_aa", input, output_size, 2, {scales_h, scales_w}, "cubic-antialias", align_corners);
  return detail::named(out, "UpsampleBicubic2DAaBackward0", {input});
}

Tensor upsample_trilinear3d(const Tensor& input, IntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
  Tensor out =
      resample("upsample_trilinear3d", input, output_size, 3, {scales_d, scales_h, scales_w}, "linear", align_corners);
  return detail::named(out, "UpsampleTrilinear3DBackward0", {input});
}

Tensor upsample_nearest3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out = resample("upsample_nearest3d", input, output_size, 3, {scales_d, scales_h, scales_w}, "nearest", false);
  return detail::named(out, "UpsampleNearest3DBackward0", {input});
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

Tensor _upsample_nearest_exact3d(const Tensor& input, IntArrayRef output_size, std::optional<double> scales_d,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  Tensor out = resample("_upsample_nearest_exact3d", input, output_size, 3, {scales_d, scales_h, scales_w},
                        "nearest-exact", false);
  return detail::named(out, "UpsampleNearestExact3DBackward0", {input});
}

}  // namespace kiln
