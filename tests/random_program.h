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

// What a program draws from. Each is its own test case with its own bounded set of structures:
// a new structure's kernels compile on first use, which is what a cold test run pays for.
enum class Draw {
  kFloats,    // float64, float32, float16 and bfloat16 programs over elementwise ops, reductions, scans, views
  kIntegers,  // int64, int32, int16, int8 and uint8 programs: wrapping arithmetic, bitwise ops, shifts,
              // floor division, casts, and partners of another integer dtype (libtorch's promotion)
  kNn,        // float32 and float64 programs that also draw nn ops: layer_norm, linear, conv2d,
              // pooling, gather, cross_entropy, around which fusion must keep the meaning
};

// Generates a program of about `length` instructions.
Program generate(uint64_t structure_seed, uint64_t size_seed, int length, Draw draw = Draw::kFloats);

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
