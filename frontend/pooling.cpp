// 1-D and adaptive pooling, written from primitives:
//   max_pool1d, avg_pool1d  = the 2-D pools over a unit height
//   adaptive_avg_pool       = a GEMM with an averaging matrix per axis (the windows are intervals,
//                             so a 2-D average is the two 1-D averages in turn)
//   adaptive_max_pool       = index_select of each window's positions (short windows padded with
//                             their first position, which changes no maximum) -> first maximum
// Indices come from argmax over the same windows and a table of the positions they read.
#include <cmath>
#include <limits>

#include "frontend/conv_args.h"
#include "frontend/derivatives.h"
#include "frontend/native_ops.h"
#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

using detail::one;
using detail::shape_str;

namespace {

struct Pool1d {
  Tensor x;  // [N, C, L]
  bool batched;
  int64_t k, s, p, d, out;
};

// Checks a 1-D pool's arguments, naming `op`, and sizes its output as PyTorch does.
Pool1d check_pool1d(const char* op, const Tensor& input, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                    IntArrayRef dilation, bool ceil_mode) {
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected a 2D or 3D input (C, L or N, C, L), got ",
             shape_str(input));
  KILN_CHECK(input.is_floating_point(), op, ": expected a floating point input, got ", shape_str(input));
  Pool1d pool;
  pool.batched = input.dim() == 3;
  pool.x = pool.batched ? input : input.unsqueeze(0);
  pool.k = one(kernel, op, "kernel_size");
  pool.s = stride.empty() ? pool.k : one(stride, op, "stride");
  pool.p = one(padding, op, "padding");
  pool.d = one(dilation, op, "dilation");
  KILN_CHECK(pool.k > 0 && pool.s > 0 && pool.d > 0, op,
             ": kernel_size, stride and dilation must be positive, got "
             "kernel_size ",
             pool.k, ", stride ", pool.s, ", dilation ", pool.d);
  KILN_CHECK(pool.p >= 0 && pool.p <= pool.k / 2, op, ": pad should be at most half of kernel size, but got pad ",
             pool.p, " and kernel_size ", pool.k);
  const int64_t length = pool.x.size(2);
  const int64_t span = length + 2 * pool.p - pool.d * (pool.k - 1) - 1 + (ceil_mode ? pool.s - 1 : 0);
  pool.out = (span >= 0 ? span / pool.s : -((-span + pool.s - 1) / pool.s)) + 1;
  if (ceil_mode && (pool.out - 1) * pool.s >= length + pool.p) --pool.out;
  KILN_CHECK(pool.out > 0, op, ": given input ", shape_str(input), " with kernel_size ", pool.k, ", padding ", pool.p,
             " and dilation ", pool.d, ", the output size (", pool.out, ") is too small");
  return pool;
}

// The position of each window's first maximum: windows [..., cells..., K] of gathered values, where
// positions[cell * K + k] is the input position the k-th value of window `cell` came from.
Tensor first_max_positions(const Tensor& windows, const std::vector<int64_t>& positions) {
  const int64_t window = windows.size(-1);
  Tensor k = windows.detach().argmax(-1);  // [..., cells...]
  const int64_t cells = int64_t(positions.size()) / window;
  Shape cell_shape(k.sizes().end() - (windows.dim() - 3), k.sizes().end());
  Tensor start = (arange(cells, TensorOptions(kLong).device(k.device())) * window).reshape(cell_shape);
  return index_select(tensor(positions).to(k.device()), 0, (k + start).reshape({-1})).reshape(k.sizes());
}

// Adaptive windows along one axis: cell i covers [start(i), end(i)).
int64_t window_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// [out, in]: row i averages cell i's window.
Tensor averaging_matrix(int64_t in, int64_t out, const Tensor& x) {
  std::vector<double> m(out * in, 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const int64_t a = window_start(i, in, out), b = window_end(i, in, out);
    for (int64_t j = a; j < b; ++j) m[i * in + j] = 1.0 / double(b - a);
  }
  return tensor(m, x.dtype()).to(x.device()).reshape({out, in});
}

// Each cell's window positions, padded to the longest window with the window's first position.
std::vector<int64_t> adaptive_table(int64_t in, int64_t out, int64_t& longest) {
  longest = 0;
  for (int64_t i = 0; i < out; ++i) longest = std::max(longest, window_end(i, in, out) - window_start(i, in, out));
  std::vector<int64_t> table;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t a = window_start(i, in, out), b = window_end(i, in, out);
    for (int64_t j = 0; j < longest; ++j) table.push_back(a + j < b ? a + j : a);
  }
  return table;
}

// Checks an adaptive pool's input (`spatial` trailing dimensions after channels, optional batch)
// and output size; returns the batched input.
Tensor check_adaptive(const char* op, const Tensor& input, IntArrayRef output_size, int64_t spatial) {
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, op, ": expected a ", spatial + 1, "D or ",
             spatial + 2, "D input, got ", shape_str(input));
  KILN_CHECK(input.is_floating_point(), op, ": expected a floating point input, got ", shape_str(input));
  KILN_CHECK(int64_t(output_size.size()) == spatial, op, ": output_size must have ", spatial, " elements, got ",
             output_size.vec());
  for (int64_t i = 0; i < spatial; ++i) {
    KILN_CHECK(output_size[i] > 0, op, ": output_size must be positive, got ", output_size.vec());
    KILN_CHECK(input.size(input.dim() - spatial + i) > 0, op, ": expected non-empty spatial dimensions, got input ",
               shape_str(input));
  }
  return input.dim() == spatial + 2 ? input : input.unsqueeze(0);
}

Tensor unbatch(const Tensor& out, const Tensor& input, int64_t spatial) {
  return input.dim() == spatial + 2 ? out : out.squeeze(0);
}

}  // namespace

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  const Pool1d pool = check_pool1d("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = max_pool2d(pool.x.unsqueeze(2), {1, pool.k}, {1, pool.s}, {0, pool.p}, {1, pool.d}, ceil_mode);
  return pool.batched ? out.squeeze(2) : out.squeeze(2).squeeze(0);
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const Pool1d pool = check_pool1d("max_pool1d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor values = max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode);
  const int64_t length = pool.x.size(2);
  const int64_t need = (pool.out - 1) * pool.s + pool.d * (pool.k - 1) + 1;  // padded length the windows read
  Tensor padded = constant_pad_nd(pool.x.detach(), {pool.p, std::max<int64_t>(0, need - length - pool.p)},
                                  -std::numeric_limits<double>::infinity());
  std::vector<int64_t> reads, positions;  // in the padded input, and in the input
  for (int64_t i = 0; i < pool.out; ++i)
    for (int64_t j = 0; j < pool.k; ++j) {
      reads.push_back(i * pool.s + j * pool.d);
      positions.push_back(reads.back() - pool.p);
    }
  Tensor windows = index_select(padded, 2, tensor(reads).to(padded.device()))
                       .reshape({pool.x.size(0), pool.x.size(1), pool.out, pool.k});
  Tensor indices = first_max_positions(windows, positions);
  return {values, pool.batched ? indices : indices.squeeze(0)};
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  const Pool1d pool = check_pool1d("avg_pool1d", input, kernel_size, stride, padding, 1, ceil_mode);
  Tensor out = avg_pool2d(pool.x.unsqueeze(2), {1, pool.k}, {1, pool.s}, {0, pool.p}, ceil_mode, count_include_pad);
  return pool.batched ? out.squeeze(2) : out.squeeze(2).squeeze(0);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  const Tensor x = check_adaptive("adaptive_avg_pool1d", input, output_size, 1);
  Tensor out = x.matmul(averaging_matrix(x.size(2), output_size[0], x).t());
  return unbatch(detail::named(out, "AdaptiveAvgPool2DBackward0", {input}), input, 1);
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  const Tensor x = check_adaptive("adaptive_avg_pool2d", input, output_size, 2);
  const int64_t h = x.size(2), w = x.size(3), oh = output_size[0], ow = output_size[1];
  tracer::EagerGroup eager_group;
  detail::native::AvgPoolWindows windows;
  for (int64_t i = 0; i < oh; ++i)
    windows.rows.insert(windows.rows.end(), {window_start(i, h, oh), window_end(i, h, oh)});
  for (int64_t j = 0; j < ow; ++j)
    windows.cols.insert(windows.cols.end(), {window_start(j, w, ow), window_end(j, w, ow)});
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j)
      windows.divisor.push_back(
          double((windows.rows[2 * i + 1] - windows.rows[2 * i]) * (windows.cols[2 * j + 1] - windows.cols[2 * j])));
  auto composite = [=](const Tensor& in) {
    if (oh == 1 && ow == 1) return in.mean({2, 3}, true);
    Tensor rows = in.matmul(averaging_matrix(w, ow, in).t());                    // [N, C, H, OW]
    Tensor out = averaging_matrix(h, oh, in).matmul(rows.reshape({-1, h, ow}));  // [N*C, OH, OW]
    return out.reshape({in.size(0), in.size(1), oh, ow});
  };
  if (auto native = detail::native::avg_pool2d(x, windows, "AdaptiveAvgPool2DBackward0", composite))
    return unbatch(*native, input, 2);
  Tensor out = composite(x);
  const char* name = oh == 1 && ow == 1 ? "MeanBackward1" : "AdaptiveAvgPool2DBackward0";
  return unbatch(detail::named(out, name, {input}), input, 2);
}

// Averaging is separable: the width, then the height, then the depth, each a GEMM.
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  const Tensor x = check_adaptive("adaptive_avg_pool3d", input, output_size, 3);
  const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t od = output_size[0], oh = output_size[1], ow = output_size[2];
  Tensor out = x.matmul(averaging_matrix(w, ow, x).t());                      // [N, C, D, H, OW]
  out = averaging_matrix(h, oh, x).matmul(out.reshape({-1, h, ow}));          // [N*C*D, OH, OW]
  out = averaging_matrix(d, od, x).matmul(out.reshape({n * c, d, oh * ow}));  // [N*C, OD, OH*OW]
  out = out.reshape({n, c, od, oh, ow});
  return unbatch(detail::named(out, "AdaptiveAvgPool3DBackward0", {input}), input, 3);
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  const Tensor x = check_adaptive("adaptive_max_pool1d", input, output_size, 1);
  const int64_t out_len = output_size[0];
  int64_t k;
  const std::vector<int64_t> table = adaptive_table(x.size(2), out_len, k);
  Tensor windows = index_select(x, 2, tensor(table).to(x.device())).reshape({x.size(0), x.size(1), out_len, k});
  Tensor values = detail::named(detail::amax_to_first(windows, {3}), "AdaptiveMaxPool2DBackward0", {input});
  Tensor indices = first_max_positions(windows, table);
  return {unbatch(values, input, 1), unbatch(indices, input, 1)};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  const Tensor x = check_adaptive("adaptive_max_pool2d", input, output_size, 2);
  const int64_t n = x.size(0), c = x.size(1), w = x.size(3), oh = output_size[0], ow = output_size[1];
  int64_t kh, kw;
  const std::vector<int64_t> rows = adaptive_table(x.size(2), oh, kh), cols = adaptive_table(w, ow, kw);
  Tensor gathered = index_select(index_select(x, 2, tensor(rows).to(x.device())), 3, tensor(cols).to(x.device()))
                        .reshape({n, c, oh, kh, ow, kw});
  Tensor values = detail::named(detail::amax_to_first(gathered, {3, 5}), "AdaptiveMaxPool2DBackward0", {input});
  std::vector<int64_t> positions;  // window (i, j)'s element (u, v) reads rows[i][u] * W + cols[j][v]
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j)
      for (int64_t u = 0; u < kh; ++u)
        for (int64_t v = 0; v < kw; ++v) positions.push_back(rows[i * kh + u] * w + cols[j * kw + v]);
  Tensor windows = gathered.detach().permute({0, 1, 2, 4, 3, 5}).reshape({n, c, oh, ow, kh * kw});
  Tensor indices = first_max_positions(windows, positions);
  return {unbatch(values, input, 2), unbatch(indices, input, 2)};
}

Tensor feature_dropout(const Tensor& input, double p, bool train) {
  KILN_CHECK(p >= 0 && p <= 1, "feature_dropout: dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(input.dim() >= 2 && input.is_floating_point(),
             "feature_dropout: expected a floating point input with "
             "a batch and a channel dimension, got ",
             shape_str(input));
  if (!train || p == 0) return input;
  if (p == 1) return input * 0.0;
  Shape mask_shape(input.dim(), 1);
  mask_shape[0] = input.size(0);
  mask_shape[1] = input.size(1);
  // One draw per channel, as libtorch's feature noise draws it (bernoulli_ of 1 - p).
  Tensor keep = bernoulli(zeros(mask_shape, input.options()), 1 - p);
  return input * (keep * (1.0 / (1 - p)));
}

}  // namespace kiln
