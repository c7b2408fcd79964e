// A kernel is what one launch computes: a pointwise group (elementwise nodes over one iteration
// domain, several outputs written in one pass), a reduction with its elementwise prologue and
// epilogue, or a single node run by a library routine (matmul, gathers, cat). Partitioning a plan
// into kernels decides which values reach memory: only kernel outputs do.
#pragma once
#include <string>
#include <vector>

#include "fusion/plan.h"

namespace kiln::fusion {

// A read of a computed value (external to the kernel) at the kernel's domain coordinates:
// element `offset + sum(coord_d * strides_d)` of the value's flat buffer.
// How a stride enters a kernel's key: '0' (broadcast) and '1' (unit) and '2' (every other
// element: pooling windows, strided slices) are compiled in, any other ('s') is an argument.
inline char stride_class(int64_t s) { return s == 0 ? '0' : s == 1 ? '1' : s == 2 ? '2' : 's'; }

struct Read {
  ir::Node* node;
  Shape strides;  // one per domain dimension, in elements
  int64_t offset = 0;
};

// A node of the kernel's expression DAG; each argument is another kernel node (>= 0) or a read
// (~index, i.e. negative). In a Reduction, a node is computed per element of the domain (the
// reductions' prologues, a row kernel's elementwise outputs) or once per row (the reducing nodes
// and their epilogue, at the reduced coordinates); an element reads a row's values broadcast.
struct KernelNode {
  ir::Node* node;
  std::vector<int> args;
  bool per_row = false;
};
inline bool is_read(int arg) { return arg < 0; }
inline int read_index(int arg) { return ~arg; }

struct Kernel {
  enum class Kind { Pointwise, Reduction, Library };
  Kind kind = Kind::Library;
  std::vector<KernelNode> nodes;  // dependency order
  std::vector<int> reduces;       // Reduction: the reducing nodes (same domain and axes); nodes
                                  // that read them per row are the epilogue. A row kernel reduces
                                  // the trailing dims (rows) in phases, a phase's prologue reading
                                  // earlier phases' results, and may write per-element outputs too
  std::vector<Read> reads;
  std::vector<int> outputs;          // nodes written to memory, contiguously in the node's shape: in
                                     // a Reduction, per-element outputs first, then per-row ones
  Shape domain;                      // coalesced iteration space (a Reduction's: its input's)
  std::vector<bool> reduced;         // Reduction: which domain dims are reduced
  ir::Node* library_node = nullptr;  // Library: the node to run
  // false: the general kernel for any sizes, narrow_rows and tiny_inner off whatever the extents
  // (it serves small sizes while their specialized kernel is not built: codegen/halide/specialize.h).
  bool specialize_sizes = true;

  // A reduction whose innermost reduced dim is shorter than half a vector (pooling windows): it is
  // vectorized across the kept dims instead of along its rows.
  bool narrow_rows() const {
    return specialize_sizes && kind == Kind::Reduction && !reduced.empty() && reduced.back() && domain.back() <= 8;
  }
  // A narrow-rows reduction's window: its reduced dims of at most 8 elements have their extents
  // compiled in, so that the window's loops unroll into registers. 0 for other dims and kernels.
  int64_t window_extent(size_t d) const { return narrow_rows() && reduced[d] && domain[d] <= 8 ? domain[d] : 0; }
  // A pointwise kernel whose innermost dim is a few elements (a pooling window's width): that
  // extent is compiled in, and the loops run it unrolled inside vectors along the next dim.
  int64_t tiny_inner() const {
    return specialize_sizes && kind == Kind::Pointwise && domain.size() >= 2 && domain.back() <= 4 ? domain.back() : 0;
  }
  // Per node, how many reductions in sequence its value depends on: 0 for a value computed from
  // reads alone, and a reducing node's own phase counts itself (1 for the first phase).
  std::vector<int> phases() const;
  // A Reduction that writes per-element values or reduces in several phases (see reduces).
  bool row_kernel() const;

  // The structure that determines the generated code: ops, dtypes, ranks, which strides are zero
  // or one. Sizes, other strides and constants are arguments, so they are not in the key.
  std::string key() const;
};

// Groups the steps of `plan` into kernels, in an order that respects dependencies. `release`
// receives, per kernel, the materialized intermediates whose last reader it is.
std::vector<Kernel> partition(const Plan& plan, std::vector<std::vector<ir::Node*>>* release);

}  // namespace kiln::fusion
