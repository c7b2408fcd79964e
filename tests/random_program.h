// Random programs for differential testing: DAGs of kiln ops over random broadcastable shapes,
// with views, reductions, matmul, cat, gathers and in-place writes, plus a backward pass. A
// program is a list of instructions over numbered values, so it can be replayed (on another
// backend), printed, and shrunk to the smallest failing version.
//
// The structure seed decides the ops, ranks and which dims broadcast; the size seed decides the
// other extents and the data. Programs sharing a structure share their kernels' cache keys, which
// keeps thousands of programs affordable: sizes are kernel arguments.
#pragma once
#include <kiln/kiln.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::fuzz {

struct Instr {
  std::string op;             // see apply_instr() for the list
  std::vector<int> args;      // value indices
  std::vector<int64_t> ints;  // op parameters
  Shape shape;                // for "input": its shape
};

struct Program {
  ScalarType dtype = kFloat;
  std::vector<Instr> instrs;  // value i is the result of instrs[i]
  std::vector<int> outputs;
  uint64_t data_seed = 0;
  bool special_values = false;  // each input's elements 0 and 2 are NaN and -inf (if it has them)
  std::string to_string() const;
};

// Generates a program of about `length` instructions; with `integers`, one structure in eight is
// an int64 or int32 program (their kernels' first compiles are slow: a fuzzing session asks for
// them, KILN_FUZZ_INTEGERS=1, the CI run does not).
Program generate(uint64_t structure_seed, uint64_t size_seed, int length, bool integers = false);

struct Result {
  std::vector<std::vector<double>> outputs, grads;
};
// Runs the program on the current backend: forward, then backward of a weighted sum of outputs.
Result run(const Program& p);

// Empty when the two results agree within tolerance, else what differs.
std::string compare(const Result& expected, const Result& actual, ScalarType dtype);

// Shrinks a failing program: drops instructions while `fails` keeps returning true.
Program shrink(Program p, const std::function<bool(const Program&)>& fails);

}  // namespace kiln::fuzz
