// Batched matrix multiply on strided float32/float64 buffers through OpenBLAS: a transposed or
// row-strided operand is passed to BLAS as it is (lda and the transpose flag), only other layouts
// are packed first. Both backends run matmul here.
#pragma once
#include "tracer/ir.h"

namespace kiln::codegen {

// Computes a Matmul node ([B,M,K] x [B,K,N] -> contiguous [B,M,N]); returns false for dtypes
// BLAS does not take (the interpreter's generic path handles those).
bool blas_matmul(ir::Node& n);

}  // namespace kiln::codegen
