// Sliding blocks: unfold (im2col: [N, C, H, W] -> [N, C kH kW, L], one column per block) and fold
// (col2im, its adjoint: columns added back into their blocks, overlaps summed), as nn::functional
// and as modules, with libtorch's options (fold.cpp).
#pragma once
#include "frontend/nn/module.h"
#include "frontend/nn/options.h"

namespace kiln::nn {

struct UnfoldOptions {
  /* implicit */ UnfoldOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}
  KILN_ARG(ExpandingArray<2>, kernel_size);
  KILN_ARG(ExpandingArray<2>, dilation) = 1;
  KILN_ARG(ExpandingArray<2>, padding) = 0;
  KILN_ARG(ExpandingArray<2>, stride) = 1;
};

struct FoldOptions {
  FoldOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  KILN_ARG(ExpandingArray<2>, output_size);
  KILN_ARG(ExpandingArray<2>, kernel_size);
  KILN_ARG(ExpandingArray<2>, dilation) = 1;
  KILN_ARG(ExpandingArray<2>, padding) = 0;
  KILN_ARG(ExpandingArray<2>, stride) = 1;
};

namespace functional {
using UnfoldFuncOptions = UnfoldOptions;
using FoldFuncOptions = FoldOptions;

// input [N, C, H, W] (or [C, H, W]) -> [N, C kH kW, L], L the number of blocks; a column's rows
// run over C, then kH, then kW.
Tensor unfold(const Tensor& input, const UnfoldFuncOptions& options);
// input [N, C kH kW, L] (or [C kH kW, L]) -> [N, C, output_size...].
Tensor fold(const Tensor& input, const FoldFuncOptions& options);
}  // namespace functional

class UnfoldImpl : public Module {
 public:
  UnfoldImpl(ExpandingArray<2> kernel_size) : UnfoldImpl(UnfoldOptions(kernel_size)) {}
  explicit UnfoldImpl(const UnfoldOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::unfold(input, options); }
  void pretty_print(std::ostream& stream) const override;
  UnfoldOptions options;
};
KILN_MODULE(Unfold);

class FoldImpl : public Module {
 public:
  FoldImpl(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : FoldImpl(FoldOptions(output_size, kernel_size)) {}
  explicit FoldImpl(const FoldOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) { return functional::fold(input, options); }
  void pretty_print(std::ostream& stream) const override;
  FoldOptions options;
};
KILN_MODULE(Fold);

}  // namespace kiln::nn
