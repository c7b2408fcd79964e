// Differential testing: random programs run on the Halide backend must match the reference
// interpreter, forward and backward. The reference's flushes skip CSE and simplification
// (Config::rewrite_plans), so that those passes are checked too; both partition their plans.
// CI runs 2000 programs over a bounded set of structures (sizes vary freely: they are kernel
// arguments, so kernels are reused); a fuzzing session runs more with
//   KILN_FUZZ_PROGRAMS=100000 KILN_FUZZ_STRUCTURES=5000 ./kiln_tests --gtest_filter=Differential.*
// Integer programs and programs with nn ops are test cases of their own, each over a few structures
// (KILN_FUZZ_INTEGER_STRUCTURES, KILN_FUZZ_NN_STRUCTURES): their first compiles are what they cost.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "random_program.h"
#include "runtime/config.h"
#include "runtime/stats.h"

using namespace kiln;
using fuzz::Program;

namespace {

int64_t env_or(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

fuzz::Result run_on(const std::string& backend, bool rewrite_plans, const Program& p) {
  const Config saved = config();
  config().backend = backend;
  config().rewrite_plans = rewrite_plans;
  fuzz::Result r;
  try {
    r = fuzz::run(p);
  } catch (...) {
    config() = saved;
    throw;
  }
  config() = saved;
  return r;
}

std::string difference(const Program& p, const std::string& backend) {
  try {
    return fuzz::compare(run_on("interp", false, p), run_on(backend, true, p), p.dtype);
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

// Runs `programs` random programs over `structures` structures, reporting the smallest version
// of each of the first three that differ.
void expect_programs_match(int64_t programs, int64_t structures, bool special_values,
                           const std::string& backend = "halide", fuzz::Draw draw = fuzz::Draw::kFloats) {
  int failures = 0;
  for (int64_t i = 0; i < programs && failures < 3; ++i) {
    const uint64_t structure = uint64_t(i % structures), sizes = uint64_t(i);
    Program p = fuzz::generate(structure, sizes, 4 + int(structure % 7), draw);
    p.special_values = special_values;
    std::string diff = difference(p, backend);
    if (diff.empty()) continue;
    ++failures;
    Program small = fuzz::shrink(p, [&](const Program& q) { return !difference(q, backend).empty(); });
    ADD_FAILURE() << "program " << i << " (structure " << structure << ") differs: " << diff << "\nsmallest:\n"
                  << small.to_string() << "\nwhich gives: " << difference(small, backend);
  }
}

}  // namespace

TEST(Differential, RandomProgramsMatchTheInterpreter) {
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000), env_or("KILN_FUZZ_STRUCTURES", 120), false);
}

// The same with a NaN and a -inf in every input: NaN must stay NaN through fused comparisons and
// selects, and special values come out as the interpreter's (a fused x <= 0 was true for NaN, and
// Halide's pow gave 0 for NaN^y). A NaN spreads through sums, so these programs check less of the
// finite arithmetic: the plain run above keeps that.
TEST(Differential, RandomProgramsWithNaNAndInfinityMatchTheInterpreter) {
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000) / 4, env_or("KILN_FUZZ_STRUCTURES", 120), true);
}

// The per-op kernels alone (KILN_BACKEND=unfused: every kernel unfused, chunk by chunk or node by
// node, as a flush runs it while its fused kernel compiles, and as eager mode runs it), forward and
// backward, plain and with special values.
TEST(Differential, RandomProgramsOnThePerOpKernelsMatchTheInterpreter) {
  reset_stats();
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000) / 4, env_or("KILN_FUZZ_STRUCTURES", 120), false, "unfused");
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000) / 8, env_or("KILN_FUZZ_STRUCTURES", 120), true, "unfused");
  const Stats s = stats();
  EXPECT_GE(s.kernels_unfused, env_or("KILN_FUZZ_PROGRAMS", 2000) / 4);  // a kernel or more per program
  std::cout << s << "\n";
}

// int64, int32, int16, int8 and uint8 programs (wrapping arithmetic, bitwise ops, shifts, floor
// division, casts, partners of another integer dtype), forward only.
TEST(Differential, IntegerRandomProgramsMatchTheInterpreter) {
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000) / 8, env_or("KILN_FUZZ_INTEGER_STRUCTURES", 16), false,
                        "halide", fuzz::Draw::kIntegers);
}

// Programs with nn ops (layer_norm, linear, conv2d, pooling, gather, cross_entropy) among the
// float ones, so that fusion around them is checked, forward and backward.
TEST(Differential, RandomProgramsWithNnOpsMatchTheInterpreter) {
  expect_programs_match(env_or("KILN_FUZZ_PROGRAMS", 2000) / 8, env_or("KILN_FUZZ_NN_STRUCTURES", 8), false, "halide",
                        fuzz::Draw::kNn);
}
