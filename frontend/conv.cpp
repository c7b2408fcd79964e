// Convolution, pooling and batch normalization, written from primitives like every other
// composite op. A sliding window is a strided view (`as_strided`) of the padded input, so:
//   conv2d     = pad -> windows -> copy to columns (im2col) -> one GEMM -> NCHW (+ bias)
//   max_pool2d = pad with -inf -> windows -> amax over the window axes
//   avg_pool2d = pad with 0 -> windows -> sum / per-position divisor
// Gradients come from the table: a window view's backward is AddView, which accumulates where
// windows overlap (col2im), and the pad's backward is a view of the padded gradient.
#include <cmath>
#include <limits>

#include "frontend/autograd.h"
#include "frontend/conv_args.h"
#include "frontend/derivatives.h"
#include "frontend/moments.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "tracer/view_attr.h"

namespace kiln {

using detail::Pair;
using detail::pair;
using detail::shape_str;

namespace {

// Pads the last two axes of x (any rank >= 2) with `value`: rows top/bottom, columns left/right.
Tensor pad2d(const Tensor& x, int64_t top, int64_t bottom, int64_t left, int64_t right, double value) {
  if (top == 0 && bottom == 0 && left == 0 && right == 0) return x;
  Shape padded = x.sizes().vec();
  const size_t r = padded.size();
  padded[r - 2] += top + bottom;
  padded[r - 1] += left + right;
  Shape strides = contiguous_strides(padded);
  const ir::View place{x.sizes().vec(), strides, top * strides[r - 2] + left};  // x's in the padded layout
  const int64_t n = numel_of(padded);
  Tensor out = detail::primitive(ir::Op::WriteView, {full({n}, value, x.options()), x}, {n}, x.dtype(),
                                 detail::Attrs{ir::pack_view(place)});
  return detail::named(out.view(padded), "ConstantPadNdBackward0", {x});
}

// Output length of a pooling window along one axis, as PyTorch computes it (ceil mode drops a
// last window that would start in the right padding).
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;  // floor division
  if (ceil_mode && (out - 1) * s >= in + pad) --out;
  return out;
}

struct Pool2d {
  Tensor x;      // [N, C, H, W]
  bool batched;  // the input had a batch axis
  Pair k, s, p, d;
  int64_t oh, ow;  // output size
};

Pool2d check_pool(const char* op, const Tensor& input, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected a 3D or 4D input (C, H, W or N, C, H, W), got ",
             shape_str(input));
  KILN_CHECK(input.is_floating_point(), op, ": expected a floating point input, got ", shape_str(input));
  Pool2d pool;
  pool.batched = input.dim() == 4;
  pool.x = pool.batched ? input : input.unsqueeze(0);
  pool.k = pair(kernel, op, "kernel_size");
  pool.s = stride.empty() ? pool.k : pair(stride, op, "stride");
  pool.p = pair(padding, op, "padding");
  pool.d = pair(dilation, op, "dilation");
  KILN_CHECK(pool.k.h > 0 && pool.k.w > 0 && pool.s.h > 0 && pool.s.w > 0 && pool.d.h > 0 && pool.d.w > 0, op,
             ": kernel_size, stride and dilation must be positive, got kernel_size ", kernel.vec(), ", stride ",
             stride.vec(), ", dilation ", dilation.vec());
  KILN_CHECK(pool.p.h >= 0 && pool.p.w >= 0 && pool.p.h <= pool.k.h / 2 && pool.p.w <= pool.k.w / 2, op,
             ": pad should be at most half of kernel size, but got pad ", padding.vec(), " and kernel_size ",
             kernel.vec());
  const int64_t h = pool.x.size(2), w = pool.x.size(3);
  pool.oh = pooled_size(h, pool.k.h, pool.s.h, pool.p.h, pool.d.h, ceil_mode);
  pool.ow = pooled_size(w, pool.k.w, pool.s.w, pool.p.w, pool.d.w, ceil_mode);
  KILN_CHECK(pool.oh > 0 && pool.ow > 0, op, ": given input ", shape_str(input), " with kernel_size ", kernel.vec(),
             ", padding ", padding.vec(), " and dilation ", dilation.vec(), ", the output size (", pool.oh, "x",
             pool.ow, ") is too small");
  return pool;
}

// The pool's windows over x padded with `fill` (the right and bottom padding grows to cover ceil
// mode's last window), and the window axes. Windows that tile the input (stride = kernel, no
// padding or dilation: the usual 2x2 pool) are a reshape [N, C, OH, KH, OW, KW], whose gradient is
// a reshape too; others are an as_strided view [N, C, OH, OW, KH, KW], whose gradient accumulates.
std::pair<Tensor, std::vector<int64_t>> pool_windows(const Pool2d& pool, double fill) {
  const int64_t h = pool.x.size(2), w = pool.x.size(3);
  const int64_t need_h = (pool.oh - 1) * pool.s.h + pool.d.h * (pool.k.h - 1) + 1;
  const int64_t need_w = (pool.ow - 1) * pool.s.w + pool.d.w * (pool.k.w - 1) + 1;
  const bool tiles = pool.s.h == pool.k.h && pool.s.w == pool.k.w && pool.d.h == 1 && pool.d.w == 1 && pool.p.h == 0 &&
                     pool.p.w == 0 && need_h <= h && need_w <= w;
  const int64_t n = pool.x.size(0), c = pool.x.size(1);
  if (tiles) {
    Tensor cropped = pool.x;  // narrowing only where needed: a narrowed view's gradient costs a scatter
    if (need_h < h) cropped = cropped.narrow(2, 0, need_h);
    if (need_w < w) cropped = cropped.narrow(3, 0, need_w);
    return {cropped.reshape({n, c, pool.oh, pool.k.h, pool.ow, pool.k.w}), {3, 5}};
  }
  Tensor xp = pad2d(pool.x, pool.p.h, std::max<int64_t>(0, need_h - h - pool.p.h), pool.p.w,
                    std::max<int64_t>(0, need_w - w - pool.p.w), fill)
                  .contiguous();
  const int64_t hp = xp.size(2), wp = xp.size(3);
  Tensor windows =
      detail::as_strided(xp, ir::View{{n, c, pool.oh, pool.ow, pool.k.h, pool.k.w},
                                      {c * hp * wp, hp * wp, pool.s.h * wp, pool.s.w, pool.d.h * wp, pool.d.w},
                                      0});
  return {windows, {4, 5}};
}

Tensor unbatch(const Tensor& out, bool batched) { return batched ? out : out.squeeze(0); }

}  // namespace

Tensor constant_pad_nd(const Tensor& x, IntArrayRef pad, const Scalar& value) {
  KILN_CHECK(pad.size() % 2 == 0 && int64_t(pad.size()) <= 2 * x.dim(),
             "constant_pad_nd: padding length must be "
             "even and at most twice the input's rank, got pad ",
             pad.vec(), " for input ", shape_str(x));
  KILN_CHECK(pad.size() <= 4, "constant_pad_nd: kiln pads at most the last two dimensions, got pad ", pad.vec());
  for (auto p : pad) KILN_CHECK(p >= 0, "constant_pad_nd: negative padding is not supported, got pad ", pad.vec());
  const int64_t left = pad.size() > 0 ? pad[0] : 0, right = pad.size() > 1 ? pad[1] : 0;
  const int64_t top = pad.size() > 2 ? pad[2] : 0, bottom = pad.size() > 3 ? pad[3] : 0;
  if (x.dim() == 1) return pad2d(x.unsqueeze(0), 0, 0, left, right, value.to<double>()).squeeze(0);
  return pad2d(x, top, bottom, left, right, value.to<double>());
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride_arg,
              IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups) {
  const char* op = "conv2d";
  KILN_CHECK(weight.dim() == 4, op, ": expected a 4D weight [out_channels, in_channels / groups, kH, kW], got ",
             shape_str(weight));
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected a 3D (unbatched) or 4D (batched) input, got ",
             shape_str(input), " for weight ", shape_str(weight));
  KILN_CHECK(input.dtype() == weight.dtype() && input.is_floating_point(), op, ": input ", shape_str(input),
             " and weight ", shape_str(weight), " must have the same floating point dtype");
  KILN_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  const Pair s = pair(stride_arg, op, "stride"), p = pair(padding_arg, op, "padding"),
             d = pair(dilation_arg, op, "dilation");
  KILN_CHECK(s.h > 0 && s.w > 0 && d.h > 0 && d.w > 0 && p.h >= 0 && p.w >= 0, op,
             ": stride and dilation must be positive and padding non-negative, got stride ", stride_arg.vec(),
             ", padding ", padding_arg.vec(), ", dilation ", dilation_arg.vec());
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t o = weight.size(0), cg = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  KILN_CHECK(o % groups == 0 && cg * groups == c, op, ": given groups=", groups, ", weight ", shape_str(weight),
             " expects input with ", cg * groups, " channels (and out_channels divisible by groups), but got input ",
             shape_str(input));
  KILN_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == o), op, ": expected bias of shape [", o, "], got ",
             shape_str(bias));
  const int64_t hp = h + 2 * p.h, wp = w + 2 * p.w;
  KILN_CHECK(hp >= d.h * (kh - 1) + 1 && wp >= d.w * (kw - 1) + 1, op, ": calculated padded input size per channel: (",
             hp, " x ", wp, "). Kernel size: (", d.h * (kh - 1) + 1, " x ", d.w * (kw - 1) + 1,
             "). Kernel size can't be greater than actual input size (input ", shape_str(input), ", weight ",
             shape_str(weight), ")");
  const int64_t oh = (hp - d.h * (kh - 1) - 1) / s.h + 1, ow = (wp - d.w * (kw - 1) - 1) / s.w + 1;
  const int64_t g = groups, og = o / g, patch = cg * kh * kw;

  // Columns [G, Cg*KH*KW, N*OH*OW]: column j holds output position j's window. Rows run along
  // the output's width, so the im2col copy (and its adjoint, the fold) moves contiguous runs.
  tracer::EagerGroup eager_group;
  auto composite_cols = [=](const Tensor& x) {
    Tensor xp = pad2d(x, p.h, p.h, p.w, p.w, 0.0).contiguous();
    Tensor windows = detail::as_strided(
        xp,
        ir::View{{g, cg, kh, kw, n, oh, ow}, {cg * hp * wp, hp * wp, d.h * wp, d.w, c * hp * wp, s.h * wp, s.w}, 0});
    return windows.reshape({g, patch, n * oh * ow});
  };
  const auto native = detail::native::im2col(x, {n, c, h, w, kh, kw, oh, ow, s.h, s.w, p.h, p.w, d.h, d.w},
                                             {g, patch, n * oh * ow}, composite_cols);
  Tensor cols = native ? *native : composite_cols(x);
  Tensor out = weight.reshape({g, og, patch}).matmul(cols);  // [G, Og, N*OH*OW]
  out = out.reshape({o, n, oh, ow}).permute({1, 0, 2, 3});
  out = bias.defined() ? out + bias.view({1, o, 1, 1}) : out.contiguous();
  return unbatch(detail::named(out, "ConvolutionBackward0", {input, weight, bias}), batched);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  Pool2d pool = check_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode);
  tracer::EagerGroup eager_group;
  auto composite = [pool](const Tensor& x) {
    Pool2d of_x = pool;
    of_x.x = x;
    auto [windows, axes] = pool_windows(of_x, -std::numeric_limits<double>::infinity());
    return detail::amax_to_first(windows, axes);  // the gradient to each window's first maximum
  };
  const auto native =
      detail::native::max_pool2d(pool.x,
                                 {pool.x.size(0) * pool.x.size(1), pool.x.size(2), pool.x.size(3), pool.oh, pool.ow,
                                  pool.k.h, pool.k.w, pool.s.h, pool.s.w, pool.p.h, pool.p.w, pool.d.h, pool.d.w},
                                 composite);
  if (native) return unbatch(*native, pool.batched);
  Tensor out = composite(pool.x);
  return unbatch(detail::named(out, "MaxPool2DWithIndicesBackward0", {input}), pool.batched);
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  Pool2d pool = check_pool("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode);
  KILN_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor must be not zero");
  // Each output's window clipped to the input, and its divisor, as PyTorch counts it: that
  // window, or the window clipped to the padded input with count_include_pad.
  const int64_t h = pool.x.size(2), w = pool.x.size(3);
  detail::native::AvgPoolWindows windows;
  auto clip = [](int64_t start, int64_t k, int64_t size, int64_t pad, std::vector<int64_t>& out) {
    const int64_t end = std::min(start + k, size + pad);
    out.insert(out.end(), {std::max<int64_t>(start, 0), std::min(end, size)});
    return end - start;  // in the padded input
  };
  std::vector<int64_t> padded_rows, padded_cols;
  for (int64_t i = 0; i < pool.oh; ++i)
    padded_rows.push_back(clip(i * pool.s.h - pool.p.h, pool.k.h, h, pool.p.h, windows.rows));
  for (int64_t j = 0; j < pool.ow; ++j)
    padded_cols.push_back(clip(j * pool.s.w - pool.p.w, pool.k.w, w, pool.p.w, windows.cols));
  for (int64_t i = 0; i < pool.oh; ++i)
    for (int64_t j = 0; j < pool.ow; ++j)
      windows.divisor.push_back(divisor_override    ? double(*divisor_override)
                                : count_include_pad ? double(padded_rows[i] * padded_cols[j])
                                                    : double((windows.rows[2 * i + 1] - windows.rows[2 * i]) *
                                                             (windows.cols[2 * j + 1] - windows.cols[2 * j])));
  tracer::EagerGroup eager_group;
  auto composite = [pool, divisor = windows.divisor](const Tensor& x) {
    Pool2d of_x = pool;
    of_x.x = x;
    auto [views, axes] = pool_windows(of_x, 0.0);
    return sum(views, axes) / tensor(divisor, x.dtype()).to(x.device()).view({pool.oh, pool.ow});
  };
  if (auto native = detail::native::avg_pool2d(pool.x, windows, "AvgPool2DBackward0", composite))
    return unbatch(*native, pool.batched);
  Tensor out = composite(pool.x);
  return unbatch(detail::named(out, "AvgPool2DBackward0", {input}), pool.batched);
}

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  KILN_CHECK(input.dim() >= 2 && input.is_floating_point(), op,
             ": expected a floating point input of at least 2 "
             "dimensions (N, C, ...), got ",
             shape_str(input));
  const int64_t c = input.size(1);
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    KILN_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == c), op,
               ": expected weight, bias and running "
               "statistics of shape [",
               c, "] for input ", shape_str(input), ", got ", shape_str(*t));
  KILN_CHECK(training || (running_mean.defined() && running_var.defined()), op,
             ": running_mean and running_var must be defined in evaluation mode (input ", shape_str(input), ")");
  tracer::EagerGroup eager_group;
  std::vector<int64_t> axes{0}, channel_shape(input.dim(), 1);
  for (int64_t a = 2; a < input.dim(); ++a) axes.push_back(a);
  channel_shape[1] = c;
  const int64_t count = input.numel() / std::max<int64_t>(c, 1);
  Tensor centered, var;
  if (training) {
    KILN_CHECK(count > 1, op, ": expected more than 1 value per channel when training, got input ", shape_str(input));
    auto composite = [=](const Tensor& x, const Tensor& w, const Tensor& b) {
      return batch_norm(x, w, b, Tensor(), Tensor(), true, momentum, eps);
    };
    if (auto native =
            detail::native::batch_norm(input, weight, bias, running_mean, running_var, momentum, eps, composite))
      return *native;
    const auto moments = detail::shifted_moments(input, axes);  // one pass, as layer_norm
    centered = moments.centered;
    var = moments.var;
    if (running_mean.defined()) {
      autograd::NoGradGuard no_grad;
      Tensor(running_mean).mul_(1 - momentum).add_(moments.mean.view({c}) * momentum);
      Tensor(running_var).mul_(1 - momentum).add_(var.detach().view({c}) * (momentum * count / double(count - 1)));
    }
  } else {
    centered = input - running_mean.view(channel_shape);
    var = running_var.view(channel_shape);
  }
  Tensor out = centered * (var + eps).rsqrt();
  if (weight.defined()) out = out * weight.view(channel_shape);
  if (bias.defined()) out = out + bias.view(channel_shape);
  return detail::named(out, "NativeBatchNormBackward0", {input});
}

}  // namespace kiln
