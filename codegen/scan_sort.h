// Scans and orderings along one dim (tracer/ops.def's Scan and Sort kinds): library routines that
// walk each row along the dim in its own type, rows split across kiln's threads. Every backend runs
// them as Library kernels (the Halide backend through run_node); each routine follows libtorch's
// CPU kernel, so results, NaN placement and the positions picked among ties match it.
#pragma once
#include "tracer/ir.h"

namespace kiln::codegen {

// Computes a Scan node (CumSum, CumProd, LogCumSumExp, CumMaxIndex, CumMinIndex) over its computed
// input into a new contiguous buffer.
void run_scan(ir::Node& n);
// Computes a Sort node (SortIndex, TopKIndex, KthValueIndex, MedianIndex, ModeIndex, SearchSorted).
void run_sort(ir::Node& n);

}  // namespace kiln::codegen
