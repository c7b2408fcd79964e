// The tiled executor of unfused kernels: a pointwise kernel, or a reduction over rows (its
// reduced dims trailing) with its prologue and epilogue, runs chunk by chunk of its domain (about
// a thousand elements, or whole rows), each node computed over the chunk by its per-op loop into a
// buffer that stays in cache. Memory sees what the fused kernel reads and writes, once, without a
// compiler: what eager mode and the steps before the fused kernels are built run.
#pragma once
#include "fusion/kernel.h"

namespace kiln::codegen {

// Runs `k` (its reads computed) chunk by chunk and returns true, or returns false having computed
// nothing where it cannot: a library kernel, a reduction over leading dims or over rows too long
// for a chunk, a node without a per-op loop, or a node computed already.
bool run_tiled(const fusion::Kernel& k);

}  // namespace kiln::codegen
