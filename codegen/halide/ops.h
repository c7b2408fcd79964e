// What the IR's ops compute, as Halide expressions: each elementwise op (lower_op) and each
// reduction's initial value and update, with the vectorizing float32 exp, log and tanh they use;
// and the types and target every kernel is built with. For codegen/halide's lowering only (it
// includes Halide.h).
#pragma once
#include <Halide.h>

#include <vector>

#include "runtime/dtype.h"
#include "tracer/ir.h"

namespace kiln::codegen::halide {

// The host CPU, strict floating point, and no runtime or checks of its own (backend.cpp loads one
// shared runtime).
Halide::Target kernel_target();

// A dtype's type in expressions (bool as Bool) and in buffers (bool as a byte).
Halide::Type value_type(ScalarType t);
Halide::Type storage_type(ScalarType t);
Halide::Expr to_value(Halide::Expr e, ScalarType t);
Halide::Expr to_storage(Halide::Expr e, ScalarType t);
// A value computed in value_type(t) rounded as dtype t stores it (narrow integers wrap, float16
// and bfloat16 round to nearest even), still in value_type(t).
Halide::Expr round_to_dtype(Halide::Expr e, ScalarType t);
// `e` as a value of dtype `to` (to bool: nonzero), rounded to it.
Halide::Expr convert(Halide::Expr e, ScalarType to);
bool is_float(const Halide::Expr& e);

// Node `n` (an elementwise op) applied to its operands' values `a`.
Halide::Expr lower_op(const ir::Node& n, const std::vector<Halide::Expr>& a);

// A reducing node's initial value, and its update of `acc` by `x`.
Halide::Expr reduction_initial(const ir::Node& red);
Halide::Expr reduction_update(const ir::Node& red, Halide::Expr acc, Halide::Expr x);

}  // namespace kiln::codegen::halide
