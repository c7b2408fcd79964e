// Transposed convolution, 1-D convolution and padding modes, written from primitives as
// conv.cpp's conv2d is:
//   conv_transpose2d = one GEMM (weight^T x per group: the columns) -> col2im, an AddView of the
//                      columns' windows into the padded output (overlaps accumulate) -> crop
//   conv1d, conv_transpose1d = the 2-D forms over a unit height
//   pad (reflect, replicate, circular) = index_select with a table of source positions
// Gradients come from the table: the AddView's backward is the windows' strided view (im2col),
// the GEMM's is two GEMMs, index_select's is an IndexAdd.
#include <algorithm>

#include "frontend/conv_args.h"
#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

using detail::one;
using detail::Pair;
using detail::pair;
using detail::shape_str;

namespace {

// conv_transpose over x [N, C, H, W] and weight [C, O / groups, kH, kW]; `shown_input` and
// `shown_weight` are the caller's tensors, which errors name (the 1-D form passes its own).
Tensor conv_transpose(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, Pair s, Pair p,
                      Pair out_pad, int64_t groups, Pair d, const Tensor& shown_input, const Tensor& shown_weight) {
  KILN_CHECK(x.dtype() == weight.dtype() && x.is_floating_point(), op, ": input ", shape_str(shown_input),
             " and weight ", shape_str(shown_weight), " must have the same floating point dtype");
  KILN_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  KILN_CHECK(s.h > 0 && s.w > 0 && d.h > 0 && d.w > 0 && p.h >= 0 && p.w >= 0 && out_pad.h >= 0 && out_pad.w >= 0, op,
             ": stride and dilation must be positive, padding and output_padding non-negative");
  KILN_CHECK((out_pad.h < s.h || out_pad.h < d.h) && (out_pad.w < s.w || out_pad.w < d.w), op,
             ": output padding must be smaller than either stride or dilation, got output_padding (", out_pad.h, ", ",
             out_pad.w, "), stride (", s.h, ", ", s.w, "), dilation (", d.h, ", ", d.w, ")");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t og = weight.size(1), kh = weight.size(2), kw = weight.size(3), o = og * groups;
  KILN_CHECK(weight.size(0) == c && c % groups == 0, op, ": given groups=", groups, ", weight ",
             shape_str(shown_weight), " expects input with ", weight.size(0),
             " channels (divisible by groups), but got input ", shape_str(shown_input));
  KILN_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == o), op, ": expected bias of shape [", o,
             "] for weight ", shape_str(shown_weight), ", got ", shape_str(bias));
  // The output before cropping the padding, and after.
  const int64_t hf = (h - 1) * s.h + d.h * (kh - 1) + 1 + out_pad.h,
                wf = (w - 1) * s.w + d.w * (kw - 1) + 1 + out_pad.w;
  const int64_t oh = hf - 2 * p.h, ow = wf - 2 * p.w;
  KILN_CHECK(oh > 0 && ow > 0, op, ": given input ", shape_str(shown_input), " and weight ", shape_str(shown_weight),
             ", the calculated output size per channel (", oh, " x ", ow, ") is too small");
  const int64_t g = groups, cg = c / g, patch = og * kh * kw;

  // Columns [G, Og*kH*kW, N*H*W]: column j holds what input position j adds to its window.
  Tensor xs = n == 1 ? x.reshape({g, cg, h * w}) : x.reshape({n, c, h * w}).transpose(0, 1).reshape({g, cg, n * h * w});
  Tensor cols = weight.reshape({g, cg, patch}).transpose(1, 2).matmul(xs);
  // col2im: the columns added into their windows of the full output [N, O, Hf, Wf], the windows
  // laid out as conv2d reads them.
  const ir::View windows{
      {g, og, kh, kw, n, h, w}, {og * hf * wf, hf * wf, d.h * wf, d.w, o * hf * wf, s.h * wf, s.w}, 0};
  Tensor out = detail::embed(cols.reshape({g, og, kh, kw, n, h, w}), {n, o, hf, wf}, windows);
  if (p.h > 0) out = out.narrow(2, p.h, oh);
  if (p.w > 0) out = out.narrow(3, p.w, ow);
  out = bias.defined() ? out + bias.view({1, o, 1, 1}) : out.contiguous();
  return detail::named(out, "ConvolutionBackward0", {x, weight, bias});
}

// Source positions of a padded axis of length n: j in [-left, n + right) read position table[j].
std::vector<int64_t> pad_table(int64_t n, int64_t left, int64_t right, const std::string& mode) {
  std::vector<int64_t> table;
  for (int64_t j = -left; j < n + right; ++j) {
    if (mode == "reflect")
      table.push_back(j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j);
    else if (mode == "replicate")
      table.push_back(std::clamp<int64_t>(j, 0, n - 1));
    else
      table.push_back(((j % n) + n) % n);  // circular
  }
  return table;
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose2d";
  KILN_CHECK(weight.dim() == 4, op, ": expected a 4D weight [in_channels, out_channels / groups, kH, kW], got ",
             shape_str(weight));
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected a 3D (unbatched) or 4D (batched) input, got ",
             shape_str(input), " for weight ", shape_str(weight));
  const bool batched = input.dim() == 4;
  Tensor out = conv_transpose(op, batched ? input : input.unsqueeze(0), weight, bias, pair(stride, op, "stride"),
                              pair(padding, op, "padding"), pair(output_padding, op, "output_padding"), groups,
                              pair(dilation, op, "dilation"), input, weight);
  return batched ? out : out.squeeze(0);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose1d";
  KILN_CHECK(weight.dim() == 3, op, ": expected a 3D weight [in_channels, out_channels / groups, kW], got ",
             shape_str(weight));
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected a 2D (unbatched) or 3D (batched) input, got ",
             shape_str(input), " for weight ", shape_str(weight));
  const bool batched = input.dim() == 3;
  const Tensor x = (batched ? input : input.unsqueeze(0)).unsqueeze(2);
  Tensor out = conv_transpose(op, x, weight.unsqueeze(2), bias, {1, one(stride, op, "stride")},
                              {0, one(padding, op, "padding")}, {0, one(output_padding, op, "output_padding")}, groups,
                              {1, one(dilation, op, "dilation")}, input, weight)
                   .squeeze(2);
  return batched ? out : out.squeeze(0);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const char* op = "conv1d";
  KILN_CHECK(weight.dim() == 3, op, ": expected a 3D weight [out_channels, in_channels / groups, kW], got ",
             shape_str(weight));
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected a 2D (unbatched) or 3D (batched) input, got ",
             shape_str(input), " for weight ", shape_str(weight));
  const int64_t s = one(stride, op, "stride"), p = one(padding, op, "padding"), d = one(dilation, op, "dilation");
  KILN_CHECK(groups > 0 && weight.size(1) * groups == input.size(-2) && weight.size(0) % groups == 0, op,
             ": given groups=", groups, ", weight ", shape_str(weight), " expects input with ", weight.size(1) * groups,
             " channels (and out_channels divisible by groups), but got input ", shape_str(input));
  KILN_CHECK(s > 0 && d > 0 && p >= 0, op,
             ": stride and dilation must be positive and padding non-negative, got "
             "stride ",
             s, ", padding ", p, ", dilation ", d);
  KILN_CHECK(input.size(-1) + 2 * p >= d * (weight.size(2) - 1) + 1, op,
             ": calculated padded input size per channel: (", input.size(-1) + 2 * p, "). Kernel size: (",
             d * (weight.size(2) - 1) + 1, "). Kernel size can't be greater than actual input size (input ",
             shape_str(input), ", weight ", shape_str(weight), ")");
  return conv2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, {1, s}, {0, p}, {1, d}, groups).squeeze(-2);
}

Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode, std::optional<double> value) {
  if (mode == "constant") return constant_pad_nd(input, pad, value.value_or(0.0));
  KILN_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular", "pad: unknown padding mode \"", mode,
             "\" (expected constant, reflect, replicate or circular)");
  KILN_CHECK(!value || *value == 0, "pad: padding mode \"", mode, "\" doesn't take in value argument");
  const int64_t axes = int64_t(pad.size()) / 2;
  KILN_CHECK(pad.size() % 2 == 0 && axes >= 1 && axes <= 3 && input.dim() >= axes + 1, "pad: ", mode,
             " padding takes 2, 4 or 6 values for an input with a channel dimension before the padded ones, got pad ",
             pad.vec(), " for input ", shape_str(input));
  Tensor out = input;
  for (int64_t i = 0; i < axes; ++i) {  // pad[2i], pad[2i + 1] pad dimension -1 - i
    const int64_t dim = input.dim() - 1 - i, n = input.size(dim), left = pad[2 * i], right = pad[2 * i + 1];
    KILN_CHECK(left >= 0 && right >= 0, "pad: negative ", mode, " padding is not supported, got pad ", pad.vec());
    const bool fits = mode == "reflect" ? left < n && right < n : mode == "circular" ? left <= n && right <= n : n > 0;
    KILN_CHECK(fits, "pad: ", mode, " padding (", left, ", ", right, ") of dimension ", dim, " must be ",
               mode == "replicate" ? "of a non-empty dimension"
               : mode == "reflect" ? "less than"
                                   : "at most",
               mode == "replicate" ? "" : " its size", " in input ", shape_str(input));
    if (left || right) out = index_select(out, dim, tensor(pad_table(n, left, right, mode)).to(out.device()));
  }
  return out;
}

}  // namespace kiln
