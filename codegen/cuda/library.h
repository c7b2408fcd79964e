// What the library kernels' CUDA sources share (library.cpp: gathers, scatters, cat, view writes,
// arg-reductions, running positions, searchsorted; library_rows.cpp: sorts and block-per-row
// scans): their parameters, named per view, in source.h's calling convention.
#pragma once
#include <string>
#include <vector>

#include "codegen/cuda/source.h"
#include "tracer/ir.h"

namespace kiln::codegen::cuda {

// A view's rank and what its parameters are called: offset `<p>o`, sizes `<p>n<d>`, strides
// `<p>s<d>`.
struct ViewParams {
  std::string prefix;
  size_t rank = 0;
  std::string size(size_t d) const { return prefix + "n" + std::to_string(d); }
  std::string stride(size_t d) const { return prefix + "s" + std::to_string(d); }
  std::string offset() const { return prefix + "o"; }
};

// The views a library node's source reads, in argument order: the output's shape (sizes only),
// each input's view, then for a view write the target view in the output.
std::vector<ir::View> argument_views(const ir::Node& n);

// `extern "C" __global__ void __launch_bounds__(...) function(<parameters>) {`: a pointer per
// input, the views' offsets, sizes and strides, a Sort node's attributes (`long long attr<i>`),
// the output pointer, and a sort's workspace pointer (`work`) where library_workspace says.
std::string library_signature(const ir::Node& n, const std::string& function);

// library_rows.cpp: the kernels of Sort nodes that order rows, and of the value scans (CumSum,
// CumProd, LogCumSumExp), one function each, named `name`.
std::string sort_rows_source(const ir::Node& n, const std::string& name);
std::string scan_rows_source(const ir::Node& n, const std::string& name);
// The grid (a block per row) and workspace of those kernels; false for other nodes.
bool rows_launch_dims(const ir::Node& n, int sm_count, LaunchDims& dims);
// Rows of this length or longer are scanned by a whole block each, shorter ones by a thread.
inline constexpr int64_t kBlockScanLength = 128;
// The longest row a sort keeps in shared memory (a power of two): longer rows are sorted tile by
// tile and merged in the workspace.
inline constexpr int64_t kSortTile = 2048;

}  // namespace kiln::codegen::cuda
