// A kernel's parameters in Halide (in the order of arguments.h) and the expression of each of its
// nodes at given coordinates: what the Funcs of a kernel (lower_kernel.h) are defined with. For
// the compiler module only (it includes Halide.h).
#pragma once
#include <Halide.h>

#include <functional>
#include <map>
#include <vector>

#include "codegen/arguments.h"
#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// The kernel's parameters, and the expression of every kernel node at given domain coordinates.
struct Lowering {
  const fusion::Kernel& k;
  std::vector<Halide::ImageParam> inputs;
  std::vector<Halide::Param<int32_t>> extents;
  std::vector<Halide::Param<int32_t>> offsets;
  std::vector<std::map<size_t, Halide::Param<int32_t>>> strides;  // per read: dim -> param
  std::map<int, Halide::Expr> consts;  // node index -> its Const's value: a float64 Param, int64 for an int64 Const
  std::vector<Halide::Argument> arguments;  // those for_each_argument (arguments.h) names, outputs aside

  explicit Lowering(const fusion::Kernel& kernel);

  // Read `r`'s value at the domain coordinates `coords`.
  Halide::Expr load(int r, const std::vector<Halide::Expr>& coords);

  // A value stored per row: element `index` of `f`'s Tuple, or all of `f` (index -1).
  struct Stored {
    Halide::Func f;
    int index;
  };
  struct Context {
    std::vector<Halide::Expr> coords;
    std::vector<Halide::Expr> memo;
    std::map<int, Halide::Expr> reduced;            // in an epilogue: the reductions' values, by node
    Context* rows = nullptr;                        // per element of a row kernel: where per-row values are
    const std::map<int, Stored>* stored = nullptr;  // a row kernel's values stored per row
  };
  // A row kernel's per-row values that its elements read, each computed once per row (inline, the
  // loops over a row's elements would compute them again at every vector), at `row_vars`.
  std::map<int, Halide::Func> row_values;
  std::vector<Halide::Var> row_vars;

  // The value of kernel node `i` at `c.coords` (one of a few coordinate sets: the domain's, or a
  // reduction's output coordinates for its epilogue), memoized per set so that Halide
  // expressions share their common subtrees.
  Halide::Expr value(int i, Context& c);
};

// Halide's vars, innermost first: domain dim d (outermost first) is var rank-1-d.
std::vector<Halide::Var> make_vars(size_t rank);

// Defines f at lhs as one value, or as a Tuple of several (a pipeline writing several outputs, or
// accumulating several reductions, in one loop).
void define(Halide::Func& f, const std::vector<Halide::Var>& lhs, const std::vector<Halide::Expr>& values);

// Value `j` of f at `at`: f's value itself when it holds one (not a Tuple).
Halide::Expr tuple_element(const Halide::Func& f, const std::vector<Halide::Expr>& at, size_t j);

}  // namespace kiln::codegen::halide
