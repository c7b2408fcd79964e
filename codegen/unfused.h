// The unfused executor: runs a fusion::Kernel on the per-op kernels compiled with kiln
// (codegen/per_op_kernels.h), chunk by chunk where it can (codegen/tiled_kernels.h: one pass over
// memory), else node by node with intermediates in buffers of their own; each value rounded to its
// dtype as the fused kernel rounds it. A compiled backend runs a kernel so while its fused code
// compiles (KILN_COMPILE=background) and in eager mode; the nodes without a per-op kernel go to
// the interpreter (Stats::nodes_interpreted), library nodes to their library routines.
#pragma once
#include "codegen/backend.h"

namespace kiln::codegen {

// Per node of `k` (its index in k.nodes), the nodes whose last reader in k it is (a node that no
// other reads is its own last reader): what running k node by node may free after that node.
std::vector<std::vector<size_t>> last_reads(const fusion::Kernel& k);

// Runs `k` (its reads computed), keeping only its outputs and what was computed before; counts a
// kernel in Stats::kernels_unfused.
void run_unfused(const fusion::Kernel& k);

// A backend that runs every kernel unfused (KILN_BACKEND=unfused): the per-op kernels alone, as
// the differential tests check them against the interpreter.
Backend& unfused_backend();

}  // namespace kiln::codegen
