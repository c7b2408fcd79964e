// Internal to frontend/: how ops turn tensors into IR operands and IR nodes back into tensors.
#pragma once
#include <initializer_list>

#include "frontend/tensor.h"
#include "tracer/storage.h"

namespace kiln::detail {

// The IR operand reading tensor `t`: its storage's current content, seen through t's view.
ir::Operand operand(const Tensor& t);

// A contiguous tensor over a new storage whose content is `node`.
Tensor wrap(ir::NodePtr node);

// Records one IR node over `inputs` (each read through its view, which must already have the
// shape the op expects) and returns its output as a new tensor. No autograd: see primitive().
struct Attrs {
  std::vector<int64_t> ints;
  double scalar = 0;
};
Tensor record(ir::Op op, const TensorList& inputs, Shape shape, ScalarType dtype, Attrs attrs = {});

// A tensor sharing t's storage with another view (no autograd: see views.cpp).
Tensor alias(const Tensor& t, Shape sizes, Shape strides, int64_t offset);

// Zeros already in memory (an Input node), where zeros() is a lazy constant that folds into its
// consumers. Optimizer state starts so: its first update then runs the kernels of every later one
// instead of compiling its own.
Tensor zeros_in_memory(const Tensor& like);

// Normalizes a possibly negative dim against `rank`, naming `op` if it is out of range.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
std::string shape_str(const Tensor& t);  // "[2, 3] float32"

}  // namespace kiln::detail
