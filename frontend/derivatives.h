// Internal to frontend/: the table of backward formulas, one row per differentiable primitive op
// and per kind of view (as PyTorch's derivatives.yaml), and the two functions that apply an op
// with autograd: primitive() for IR ops and view() for views.
#pragma once
#include "frontend/autograd.h"
#include "frontend/trace.h"
#include "runtime/pool.h"

namespace kiln::detail {

// The kinds of view. Each has a backward row; `ints` carries what the row needs.
enum class ViewKind : uint8_t {
  Reshape,  // also squeeze, unsqueeze, flatten
  Permute,  // ints = dims
  Expand,
  Strided,  // narrow, select, slice, as_strided: ints = a view (ir::pack_view) relative to a
            // contiguous layout of the input's shape
};

// A backward node's per-input lists, from the small-object pool (runtime/pool.h): each traced op
// with a gradient makes four, and malloc and free were the largest cost of tracing such an op.
template <class T>
using InputList = std::vector<T, pool::Allocator<T>>;

struct BackwardArgs {
  const Tensor& grad;    // gradient of the output
  const TensorList& in;  // saved inputs (undefined where the row saves none)
  const Tensor& out;     // saved output (undefined unless the row saves it)
  const Attrs& attrs;
  const InputList<Shape>& in_shapes;
  const InputList<Shape>& in_strides;  // the inputs' layouts (a gradient may follow them)
  const InputList<ScalarType>& in_dtypes;
  const std::vector<bool>& needs;  // which inputs want a gradient
};
using BackwardFn = TensorList (*)(const BackwardArgs&);

struct Derivative {
  const char* name;     // the grad_fn name users see, as PyTorch prints it
  uint8_t save_inputs;  // bit i set: input i is saved
  bool save_output;
  BackwardFn backward;
  // For each saved input, the inputs whose gradients read it (bit j: input j); 0 means always
  // saved. An input no needed gradient reads is not kept: x.mul_(2) must not save x.
  uint8_t used_by[3] = {0, 0, 0};
};

// The row for `op`, or null when the op has no gradient (comparisons, argmax, leaves).
const Derivative* derivative(ir::Op op);
// Whether the table says `op` has no gradient (an op with neither a row nor this is a mistake).
bool declared_without_gradient(ir::Op op);
const Derivative& view_derivative(ViewKind kind);

// Records `op` over `inputs` and attaches its backward node when gradients flow.
// `sizes`, when given, are the result's sizes: the node's shape without some size-1 axes (a
// reduction without keepdim, whose grad_fn is then the reduction's node, as in PyTorch).
Tensor primitive(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype, Attrs attrs = {},
                 const std::optional<Shape>& sizes = std::nullopt);
// An elementwise op over `inputs` broadcast to `shape`. Its gradient flows through expanded
// inputs; without one, the inputs are read through broadcast views and no expanded tensor is made
// (a tiny op's largest saving).
Tensor elementwise(ir::Op op, Tensors inputs, Shape shape, ScalarType dtype);
// A copy of `x` (a Copy, CloneBackward0) laid out with `strides`: dense strides of x's sizes, in
// any order of dims. Its node copies x in that order, so that its output is the layout's memory.
Tensor copy_with_strides(const Tensor& x, const Shape& strides);
// A view of `self` (sharing storage) with the backward node of `kind`.
Tensor view(const Tensor& self, ViewKind kind, Shape sizes, Shape strides, int64_t offset, Attrs attrs = {});
// Names out's grad_fn as PyTorch names the op that made it, for ops kiln composes of primitives
// or overloads PyTorch tells apart: mean() ends in a division but is "MeanBackward0", x + 2 is
// "AddBackward1". Leaves out alone when its grad_fn is one of `inputs`' (the op made no node).
Tensor named(Tensor out, const char* grad_fn_name, Tensors inputs);
// amax over `dims` whose gradient goes to each reduced block's first maximum (its last NaN), as
// libtorch's max pooling indices pick it; amax shares it among ties (derivatives.cpp).
Tensor amax_to_first(const Tensor& x, IntArrayRef dims);

// The strided view `window` (over a contiguous `t`) of t, and its adjoint: a zero tensor of
// `shape` with that view set to `g`.
Tensor as_strided(const Tensor& t, const ir::View& window);
Tensor embed(const Tensor& g, const Shape& shape, const ir::View& window);
// Sums `g` down to `shape` over broadcast dimensions (the adjoint of expand).
Tensor sum_to(const Tensor& g, const Shape& shape);

// The next backward node's sequence_nr (creation order: later nodes run first among ready ones).
uint64_t next_sequence_nr();
// Makes `node` the grad_fn of `out` (output `output_nr`) and `out` require grad.
void set_history(Tensor& out, const std::shared_ptr<autograd::Node>& node, uint32_t output_nr = 0);
// The edge a gradient for `t` flows along (its grad_fn, or its leaf accumulator), or none.
autograd::Edge gradient_edge(const Tensor& t);
bool any_requires_grad(Tensors ts);

}  // namespace kiln::detail
