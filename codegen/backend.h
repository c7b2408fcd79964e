// The interface every backend implements: run the steps of a plan, leaving each step's node
// computed (result set, inputs dropped) and releasing intermediates as the plan says (a released
// node keeps its inputs: ir::forget_inputs_if_computed).
#pragma once
#include "fusion/plan.h"

namespace kiln::codegen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // The backend may rewrite the plan (its passes run in place); the caller drops it afterwards.
  virtual void execute(fusion::Plan& plan) = 0;
};

// The reference interpreter: one node at a time, in float64 arithmetic (int64 and bool exactly),
// rounded to each node's dtype. It is the oracle every other backend is checked against.
Backend& interpreter();

// Halide: fused kernels compiled for this CPU, cached in memory and on disk.
Backend& halide_backend();

// Computes one node on the interpreter (its inputs must be computed); used by compiled backends
// for the nodes they leave to library code.
void run_node(ir::Node& n);

// The backend chosen by KILN_BACKEND: "halide" or "interp".
Backend& current_backend();
inline void execute(fusion::Plan& plan) { current_backend().execute(plan); }

}  // namespace kiln::codegen
