// The interface every backend implements: run a flush's kernel list (fusion::Partition, made by
// the flush driver, codegen/flush.h), leaving each kernel's outputs computed and releasing, after
// kernel i, the intermediates of release[i] (a released node keeps its inputs:
// ir::forget_inputs_if_computed).
#pragma once
#include "fusion/partition_cache.h"

namespace kiln::codegen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual void run(const fusion::Partition& kernels) = 0;
};

// The reference interpreter: runs each kernel node by node, in float64 arithmetic (int64 and bool
// exactly), rounded to each node's dtype. It is the oracle every other backend is checked against.
Backend& interpreter();

// Runs one kernel on the interpreter (its reads must be computed), keeping only its outputs; used
// by compiled backends for the kernels they cannot run themselves.
void interpret(const fusion::Kernel& kernel);

// Computes one node on the interpreter (its inputs must be computed); used by compiled backends
// for the nodes they leave to library code.
void run_node(ir::Node& n);

// Whether the interpreter computes `n` on int64 (exact, wrapping) rather than in float64: its
// value and the operands it computes with are integers. Other backends follow the same rule.
bool computes_on_int64(const ir::Node& n);

}  // namespace kiln::codegen
