// Spatial transformers: affine_grid (the sampling grid of a batch of affine maps) and grid_sample
// (bilinear, trilinear or nearest sampling of an image or volume at a grid's points), as libtorch's nn::functional
// (sampling.cpp).
#pragma once
#include <optional>

#include "frontend/nn/options.h"

namespace kiln::nn::functional {

using GridSampleMode = EnumChoice<enumtype::kBilinear, enumtype::kNearest, enumtype::kBicubic>;
using GridSamplePaddingMode = EnumChoice<enumtype::kZeros, enumtype::kBorder, enumtype::kReflection>;

struct GridSampleFuncOptions {
  KILN_ARG(GridSampleMode, mode) = kBilinear;
  KILN_ARG(GridSamplePaddingMode, padding_mode) = kZeros;
  KILN_ARG(std::optional<bool>, align_corners) = std::nullopt;  // unset: false
};

// theta [N, 2, 3] and size [N, C, H, W] -> grid [N, H, W, 2] of (x, y) in [-1, 1] coordinates;
// theta [N, 3, 4] and size [N, C, D, H, W] -> [N, D, H, W, 3].
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);
// input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]; -1 and 1 the corner
// pixels' centres with align_corners, their outer edges without) -> [N, C, Ho, Wo]; input
// [N, C, D, H, W] at grid [N, Do, Ho, Wo, 3] ((x, y, z), trilinear or nearest) -> [N, C, Do, Ho, Wo].
// Points outside read zeros, the border, or the image reflected at its border (padding_mode).
// Bicubic (4D input only; libtorch's grid_sampler mode 2, which its C++ options do not name):
// the 4x4 pixels around a point, each padded alone, weighted by cubic convolution (A = -0.75).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& options = {});

}  // namespace kiln::nn::functional
