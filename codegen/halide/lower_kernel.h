// The Funcs of a kernel, by kind (pointwise, reduction, row kernel): its algorithm, not yet
// scheduled (schedule.h schedules them). For the compiler module only (it includes Halide.h).
#pragma once
#include <Halide.h>

#include <vector>

#include "codegen/halide/lowering.h"
#include "codegen/halide/reduction.h"

namespace kiln::codegen::halide {

// A pointwise kernel: a Func per group of outputs that share no computation, and the values its
// outputs share, stored in levels (each Func reads only earlier ones).
struct PointwiseFuncs {
  std::vector<Halide::Var> vars;  // innermost first
  std::vector<Halide::Func> outputs;
  std::vector<Halide::Func> stored;
};
PointwiseFuncs lower_pointwise(Lowering& L);

// A reduction kernel: the accumulators of its reductions at the kept coordinates `vars`, and
// `out`, its epilogue (the outputs) there.
struct ReductionFuncs {
  std::vector<Halide::Var> vars;  // the kept dims, innermost first
  Accumulator accumulator;
  Halide::Func out;
};
ReductionFuncs lower_reduction(Lowering& L);

// A row kernel (Kernel::row_kernel): per row, each phase's accumulators in turn, then the row's
// per-element and per-row outputs. Values used in more than one place (a prologue and an output,
// or two outputs: Halide computes each output's expression on its own) are stored per row and
// computed once, unless they are cheap.
struct RowFuncs {
  std::vector<Halide::Var> vars;  // the domain's, innermost first
  std::vector<Halide::Var> kept;  // those of the kept dims
  size_t reduced_count = 0;       // the trailing dims reduced
  std::vector<Halide::Func> stored;
  std::vector<bool> stored_nodes;         // by node: whether `stored` holds its value
  std::vector<Accumulator> accumulators;  // per phase, in order
  Halide::Func out_elements{"out"}, out_rows{"out_rows"};
  bool per_element = false, per_row = false;  // whether out_elements, out_rows are defined

  std::vector<Halide::Func> outputs() const;
};
RowFuncs lower_rows(Lowering& L);

}  // namespace kiln::codegen::halide
