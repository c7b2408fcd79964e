// unfold and fold (fold.h) as conv2d builds its columns (conv.cpp): the blocks are a strided view
// of the padded input (as_strided), and fold is that view's adjoint (embed, an AddView into zeros),
// so each is the other's gradient.
#include "frontend/nn/fold.h"

#include "frontend/derivatives.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "tracer/view_attr.h"

namespace kiln::nn {

using kiln::detail::shape_str;
using kiln::operator<<;  // sizes print as [2, 3]

namespace {

struct Blocks {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t hp, wp;  // the padded image
  int64_t oh, ow;  // blocks along each axis
};

Blocks blocks(const char* op, int64_t h, int64_t w, const ExpandingArray<2>& kernel, const ExpandingArray<2>& dilation,
              const ExpandingArray<2>& padding, const ExpandingArray<2>& stride) {
  Blocks b{kernel[0], kernel[1], dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1], 0, 0, 0, 0};
  KILN_CHECK(b.kh > 0 && b.kw > 0 && b.dh > 0 && b.dw > 0 && b.sh > 0 && b.sw > 0 && b.ph >= 0 && b.pw >= 0, op,
             ": kernel_size, dilation and stride must be positive and padding non-negative, got kernel_size ",
             IntArrayRef(kernel).vec(), ", dilation ", IntArrayRef(dilation).vec(), ", padding ",
             IntArrayRef(padding).vec(), ", stride ", IntArrayRef(stride).vec());
  b.hp = h + 2 * b.ph;
  b.wp = w + 2 * b.pw;
  b.oh = (b.hp - b.dh * (b.kh - 1) - 1) / b.sh + 1;
  b.ow = (b.wp - b.dw * (b.kw - 1) - 1) / b.sw + 1;
  KILN_CHECK(b.hp >= b.dh * (b.kh - 1) + 1 && b.wp >= b.dw * (b.kw - 1) + 1, op, ": given an image of ", h, " x ", w,
             " with padding ", IntArrayRef(padding).vec(), ", kernel_size ", IntArrayRef(kernel).vec(),
             " and dilation ", IntArrayRef(dilation).vec(), ", there are no sliding blocks");
  return b;
}

// The blocks of a contiguous [N, C, Hp, Wp] image laid out [N, C, kH, kW, OH, OW].
ir::View block_view(const Blocks& b, int64_t n, int64_t c) {
  return {{n, c, b.kh, b.kw, b.oh, b.ow}, {c * b.hp * b.wp, b.hp * b.wp, b.dh * b.wp, b.dw, b.sh * b.wp, b.sw}, 0};
}

}  // namespace

namespace functional {

Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options) {
  const char* op = "unfold";
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, op, ": expected a 3D (C, H, W) or 4D (N, C, H, W) input, got ",
             shape_str(input));
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  const Blocks b =
      blocks(op, x.size(2), x.size(3), options.kernel_size(), options.dilation(), options.padding(), options.stride());
  const Tensor padded = constant_pad_nd(x, {b.pw, b.pw, b.ph, b.ph}).contiguous();
  const Tensor cols = kiln::detail::as_strided(padded, block_view(b, n, c)).reshape({n, c * b.kh * b.kw, b.oh * b.ow});
  return batched ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& input, const FoldFuncOptions& options) {
  const char* op = "fold";
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected a 2D (C kH kW, L) or 3D (N, C kH kW, L) input, got ",
             shape_str(input));
  const bool batched = input.dim() == 3;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const ExpandingArray<2>& out_size = options.output_size();
  KILN_CHECK(out_size[0] > 0 && out_size[1] > 0, op, ": output_size must be positive, got ",
             IntArrayRef(out_size).vec());
  const Blocks b = blocks(op, out_size[0], out_size[1], options.kernel_size(), options.dilation(), options.padding(),
                          options.stride());
  const int64_t n = x.size(0), rows = x.size(1), patch = b.kh * b.kw;
  KILN_CHECK(rows % patch == 0, op, ": expected the size of input ", shape_str(input), " at dimension ",
             input.dim() - 2, " to be divisible by the product of kernel_size ",
             IntArrayRef(options.kernel_size()).vec(), ", ", patch);
  KILN_CHECK(x.size(2) == b.oh * b.ow, op, ": given output_size ", IntArrayRef(out_size).vec(), ", kernel_size ",
             IntArrayRef(options.kernel_size()).vec(), ", dilation ", IntArrayRef(options.dilation()).vec(),
             ", padding ", IntArrayRef(options.padding()).vec(), " and stride ", IntArrayRef(options.stride()).vec(),
             ", expected input dimension ", input.dim() - 1, " to be the number of sliding blocks ", b.oh, " * ", b.ow,
             " = ", b.oh * b.ow, ", but got input ", shape_str(input));
  const int64_t c = rows / patch;
  Tensor out = kiln::detail::embed(x.reshape({n, c, b.kh, b.kw, b.oh, b.ow}), {n, c, b.hp, b.wp}, block_view(b, n, c));
  if (b.ph > 0) out = out.narrow(2, b.ph, out_size[0]);
  if (b.pw > 0) out = out.narrow(3, b.pw, out_size[1]);
  if (b.ph > 0 || b.pw > 0) out = out.contiguous();
  return batched ? out : out.squeeze(0);
}

}  // namespace functional

void UnfoldImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Unfold(kernel_size=" << IntArrayRef(options.kernel_size()).vec()
         << ", dilation=" << IntArrayRef(options.dilation()).vec()
         << ", padding=" << IntArrayRef(options.padding()).vec() << ", stride=" << IntArrayRef(options.stride()).vec()
         << ")";
}

void FoldImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Fold(output_size=" << IntArrayRef(options.output_size()).vec()
         << ", kernel_size=" << IntArrayRef(options.kernel_size()).vec()
         << ", dilation=" << IntArrayRef(options.dilation()).vec()
         << ", padding=" << IntArrayRef(options.padding()).vec() << ", stride=" << IntArrayRef(options.stride()).vec()
         << ")";
}

}  // namespace kiln::nn
