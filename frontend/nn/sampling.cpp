// affine_grid and grid_sample (sampling.h) as libtorch 1.13 computes them, from kiln's ops: the
// grid is a GEMM of a constant base grid with theta; a sample is the four (eight for 5D input, 16 for bicubic, or
// one) neighbouring pixels gathered and weighted, so gradients reach both the image (gather's ScatterAdd) and the
// grid (through the interpolation weights).
#include "frontend/nn/sampling.h"

#include <array>

#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln::nn::functional {

using kiln::detail::shape_str;

namespace {

// n points spanning [-1, 1]: the pixels' centres with align_corners, else scaled by (n - 1) / n.
std::vector<double> steps(int64_t n, bool align_corners) {
  std::vector<double> v(size_t(n), 0.0);
  for (int64_t i = 0; n > 1 && i < n; ++i) {
    v[size_t(i)] = -1.0 + 2.0 * double(i) / double(n - 1);
    if (!align_corners) v[size_t(i)] *= double(n - 1) / double(n);
  }
  return v;
}

// Grid coordinates in [-1, 1] -> pixel coordinates along an axis of `size` pixels.
Tensor unnormalize(const Tensor& coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) * (0.5 * double(size - 1)) : ((coord + 1) * double(size) - 1) * 0.5;
}

// in reflected at twice_low / 2 and twice_high / 2 until it lies between them (ATen's
// reflect_coordinates).
Tensor reflect(const Tensor& in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(in);
  const double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  const Tensor distance = (in - low).abs();
  const Tensor extra = distance.fmod(span);
  const Tensor flips = (distance / span).floor();
  return where(flips.fmod(2) == 0, extra + low, span - extra + low);
}

// A pixel coordinate moved inside by the padding mode (zeros: left outside, where taps read 0).
Tensor padded(Tensor c, int64_t size, const GridSamplePaddingMode& padding, bool align_corners) {
  if (padding.is<enumtype::kBorder>()) return c.clamp(0, double(size - 1));
  if (padding.is<enumtype::kReflection>()) {
    c = align_corners ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    return c.clamp(0, double(size - 1));
  }
  return c;
}

Tensor source_index(const Tensor& coord, int64_t size, const GridSamplePaddingMode& padding, bool align_corners) {
  return padded(unnormalize(coord, size, align_corners), size, padding, align_corners);
}

// Cubic convolution's four weights (A = -0.75, as libtorch) for taps at -1, 0, 1, 2 from the
// point's floor, t its distance from that floor.
std::array<Tensor, 4> cubic_weights(const Tensor& t) {
  const double a = -0.75;
  auto near = [a](const Tensor& x) { return ((x * (a + 2) - (a + 3)) * x) * x + 1; };     // |x| <= 1
  auto far = [a](const Tensor& x) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

}  // namespace

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  const char* op = "affine_grid";
  KILN_CHECK(theta.is_floating_point(), op, ": expected theta to have floating point type, got ", shape_str(theta));
  KILN_CHECK(size.size() == 4 || size.size() == 5, op,
             ": only 2D (size [N, C, H, W]) and 3D (size [N, C, D, H, W]) "
             "affine grids are supported, got size ",
             size.vec());
  const int64_t spatial = int64_t(size.size()) - 2, n = size[0];
  KILN_CHECK(theta.dim() == 3 && theta.size(0) == n && theta.size(1) == spatial && theta.size(2) == spatial + 1, op,
             ": expected a batch of ", spatial, "D affine matrices of shape [", n, ", ", spatial, ", ", spatial + 1,
             "] for size ", size.vec(), ", got theta ", shape_str(theta));
  for (int64_t d : size) KILN_CHECK(d > 0, op, ": expected a positive size, got ", size.vec());
  // The base grid [points, spatial + 1]: (x, y[, z], 1), x fastest.
  const int64_t w = size.back(), h = size[size.size() - 2], depth = spatial == 3 ? size[2] : 1;
  const std::vector<double> xs = steps(w, align_corners), ys = steps(h, align_corners),
                            zs = steps(depth, align_corners);
  std::vector<double> base;
  for (int64_t k = 0; k < depth; ++k)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        base.insert(base.end(), {xs[size_t(j)], ys[size_t(i)]});
        if (spatial == 3) base.push_back(zs[size_t(k)]);
        base.push_back(1.0);
      }
  const int64_t points = depth * h * w;
  const Tensor base_t = tensor(base, theta.dtype()).view({1, points, spatial + 1}).expand({n, points, spatial + 1});
  Shape out{n};
  if (spatial == 3) out.push_back(depth);
  out.insert(out.end(), {h, w, spatial});
  return base_t.bmm(theta.transpose(1, 2)).view(out);
}

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options) {
  const char* op = "grid_sample";
  const bool volumetric = input.dim() == 5;
  const int64_t spatial = volumetric ? 3 : 2;
  KILN_CHECK((input.dim() == 4 || volumetric) && grid.dim() == input.dim() && grid.size(-1) == spatial, op,
             ": kiln samples 4D input [N, C, H, W] at a grid [N, H_out, W_out, 2], or 5D input [N, C, D, H, W] at a "
             "grid [N, D_out, H_out, W_out, 3], got input ",
             shape_str(input), " and grid ", shape_str(grid));
  KILN_CHECK(input.size(0) == grid.size(0), op, ": expected grid and input to have same batch size, but got input ",
             shape_str(input), " and grid ", shape_str(grid));
  KILN_CHECK(input.is_floating_point() && grid.dtype() == input.dtype(), op,
             ": expected input and grid of the same "
             "floating point dtype, got input ",
             shape_str(input), " of ", input.dtype(), " and grid ", shape_str(grid), " of ", grid.dtype());
  const int64_t n = input.size(0), c = input.size(1);
  // Sizes and grid coordinates x, y[, z], x along the last axis.
  const int64_t w = input.size(-1), h = input.size(-2), d = volumetric ? input.size(2) : 1;
  KILN_CHECK(h > 0 && w > 0 && d > 0, op, ": expected non-empty spatial dimensions, got input ", shape_str(input));
  int64_t points = 1;
  for (int64_t i = 1; i <= spatial; ++i) points *= grid.size(i);
  const bool align = options.align_corners().value_or(false);
  const Tensor ix = source_index(grid.select(-1, 0), w, options.padding_mode(), align);
  const Tensor iy = source_index(grid.select(-1, 1), h, options.padding_mode(), align);
  const Tensor iz = volumetric ? source_index(grid.select(-1, 2), d, options.padding_mode(), align) : Tensor();
  const Tensor pixels = input.reshape({n, c, d * h * w});
  // The pixels at (x, y[, z]) [N, points], zero where they fall outside the input, times weight.
  auto tap = [&](const Tensor& x, const Tensor& y, const Tensor& z, const Tensor& weight) {
    Tensor inside = (x >= 0) & (x <= double(w - 1)) & (y >= 0) & (y <= double(h - 1));
    Tensor flat = y.clamp(0, double(h - 1)).to(kLong) * w + x.clamp(0, double(w - 1)).to(kLong);
    if (volumetric) {
      inside = inside & (z >= 0) & (z <= double(d - 1));
      flat = flat + z.clamp(0, double(d - 1)).to(kLong) * (h * w);
    }
    const Tensor values = pixels.gather(2, flat.reshape({n, 1, points}).expand({n, c, points}));
    return values * where(inside, weight, 0.0).reshape({n, 1, points});
  };
  Tensor out;
  if (options.mode().is<enumtype::kBicubic>()) {
    KILN_CHECK(!volumetric, op, ": bicubic interpolation only supports 4D input, got input ", shape_str(input));
    // Unpadded coordinates: each of the 16 taps is padded on its own (a point just outside reads
    // the pixels inside its window, not the border's four).
    const Tensor x = unnormalize(grid.select(-1, 0), w, align), y = unnormalize(grid.select(-1, 1), h, align);
    const Tensor x0 = x.floor(), y0 = y.floor();
    const std::array<Tensor, 4> wx = cubic_weights(x - x0), wy = cubic_weights(y - y0);
    for (int j = 0; j < 4; ++j) {  // each row along x first, then the rows along y, as libtorch
      const Tensor row_y = padded(y0 + double(j - 1), h, options.padding_mode(), align);
      Tensor row;
      for (int i = 0; i < 4; ++i) {
        const Tensor term = tap(padded(x0 + double(i - 1), w, options.padding_mode(), align), row_y, {}, wx[i]);
        row = i == 0 ? term : row + term;
      }
      const Tensor weighted = row * wy[j].reshape({n, 1, points});
      out = j == 0 ? weighted : out + weighted;
    }
  } else if (options.mode().is<enumtype::kNearest>()) {
    out = tap(ix.round(), iy.round(), volumetric ? iz.round() : Tensor(), ones_like(ix));
  } else if (!volumetric) {
    const Tensor x0 = ix.floor(), y0 = iy.floor();
    const Tensor east = ix - x0, south = iy - y0, west = 1 - east, north = 1 - south;
    out = tap(x0, y0, {}, west * north) + tap(x0 + 1, y0, {}, east * north) + tap(x0, y0 + 1, {}, west * south) +
          tap(x0 + 1, y0 + 1, {}, east * south);
  } else {
    // Trilinear: the eight corners of the cell, each weighted by the opposite sub-volume.
    const Tensor x0 = ix.floor(), y0 = iy.floor(), z0 = iz.floor();
    const Tensor fx = ix - x0, fy = iy - y0, fz = iz - z0;
    for (int corner = 0; corner < 8; ++corner) {
      const bool bx = corner & 1, by = corner & 2, bz = corner & 4;
      const Tensor weight = (bx ? fx : 1 - fx) * (by ? fy : 1 - fy) * (bz ? fz : 1 - fz);
      const Tensor term = tap(bx ? x0 + 1 : x0, by ? y0 + 1 : y0, bz ? z0 + 1 : z0, weight);
      out = corner == 0 ? term : out + term;
    }
  }
  Shape out_shape{n, c};
  for (int64_t i = 1; i <= spatial; ++i) out_shape.push_back(grid.size(i));
  return out.reshape(out_shape);
}

}  // namespace kiln::nn::functional
