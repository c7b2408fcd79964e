// The free-function forms of libtorch's everyday tensor API that ops.h did not have: comparisons
// with tolerances, clamp and where with tensors and numbers, rearrangements (repeat, tile, flip,
// roll, triangles, diagonals, splits) and einsum. Each is a composite of kiln's traced ops, so it
// fuses and has gradients where libtorch has them. Indexing is in indexing.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "frontend/tensor.h"

namespace kiln {

inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

// |a - b| <= atol + rtol * |b|, or a == b (infinities), or both NaN with equal_nan; a bool tensor.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan);

// Tensor bounds broadcast with x; a NaN in x stays NaN.
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Tensor& max);
// Two numbers: the result is int64 for integers, the default dtype for floating numbers, bool for
// bools, shaped as the condition.
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);

Tensor repeat(const Tensor& x, IntArrayRef repeats);
Tensor tile(const Tensor& x, IntArrayRef dims);
Tensor flip(const Tensor& x, IntArrayRef dims);
// Shifts elements along `dims` (the flattened tensor when none is given), wrapping around.
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
// The lower (upper) triangle of the last two dimensions: elements with column - row <= diagonal
// (>= diagonal); the rest zero.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// A 1-D input becomes a square matrix with it on the `diagonal`-th diagonal; a 2-D input gives
// that diagonal, as a 1-D tensor.
Tensor diag(const Tensor& x, int64_t diagonal = 0);
// The diagonal of dims dim1 and dim2 (a view), moved to the last dimension.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor trace(const Tensor& x);
std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor masked_select(const Tensor& x, const Tensor& mask);
// The positions of the nonzero elements, [n, x.dim()] int64 in row-major order. Its size depends
// on the values, so it computes them (a flush), as libtorch's waits for them.
Tensor nonzero(const Tensor& x);

// Einstein summation over letters a-z and A-Z, with "->" naming the output (without it, the
// letters used once, in alphabetical order) and "..." for leading dimensions. Computed as
// diagonals, sums, permutes, reshapes and batched matrix products.
Tensor einsum(const std::string& equation, const TensorList& operands);

}  // namespace kiln
