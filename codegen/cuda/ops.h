// What the IR's ops compute, as CUDA C expressions: each elementwise op (lower_op: the op table's
// scalar meaning, compiled from tracer/op_scalar_inline.h's text) and each reduction's identity
// and combining function, with the device helpers they call (prelude). Values follow the
// interpreter (tracer/op_scalar.cpp): NaN wins max and min, int64 arithmetic wraps, int64 division
// and remainder by 0 give 0, a float to int64 out of range or NaN gives INT64_MIN; ops without an
// int64 form compute int64 operands in float64. Narrow integers compute as int64 and wrap to their
// width; float16 and bfloat16 compute in float and round to their dtype at each node, as the
// interpreter stores them.
#pragma once
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "tracer/ir.h"

namespace kiln::codegen::cuda {

// A dtype's C type in expressions (bool, long long for every integer, float for float32, float16
// and bfloat16, double) and in memory (bool as a byte, the narrow integers as themselves, float16
// and bfloat16 as their 16 bits).
const char* value_type(ScalarType t);
const char* storage_type(ScalarType t);
// An element read from memory (`element`, of storage_type(t)) as a value of value_type(t), and a
// value written back as storage_type(t).
std::string load_value(ScalarType t, const std::string& element);
std::string stored_value(ScalarType t, const std::string& value);

// A C expression and the dtype of its value.
struct Value {
  std::string code;
  ScalarType dtype;
};

// `v` as a value of dtype `to` (to bool: nonzero; a float to int64 as the interpreter's to_long).
std::string convert(const Value& v, ScalarType to);

// Node `n` (an elementwise op) applied to its operands' values: an expression of n's dtype.
std::string lower_op(const ir::Node& n, const std::vector<Value>& a);

// A reducing node's accumulator: float sums add in float64 (as the Halide backend adds blocks),
// float16 and bfloat16 sums and products too (max and min in float), integers in int64,
// everything else in the node's dtype.
ScalarType accumulator_dtype(const ir::Node& red);
// The fold's starting value (its combining op's identity), as an expression of accumulator_dtype.
std::string reduction_identity(const ir::Node& red);
// The device function that folds one value (or another thread's partial result) into an
// accumulator: combine(acc, x).
const char* reduction_combine(const ir::Node& red);

// The helpers every kernel's source starts with: int64 arithmetic, the reductions' combining
// functions, warp shuffles, and the op table's scalar meaning, tracer/op_scalar_inline.h's
// scalar_value with tracer/special_functions.h's lgamma, digamma, trigamma and erfinv (their very
// text, compiled as device code).
const std::string& prelude();

}  // namespace kiln::codegen::cuda
