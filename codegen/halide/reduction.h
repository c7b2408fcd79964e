// How a kernel's reductions are computed in Halide: the accumulators of some reducing nodes over
// the kernel's reduced dims, in one of four ways (Accumulator::Strategy). For the compiler module
// only (it includes Halide.h).
#pragma once
#include <Halide.h>

#include <functional>
#include <vector>

#include "codegen/halide/lowering.h"

namespace kiln::codegen::halide {

// The accumulators of some reducing nodes over the kernel's reduced dims, at the kept
// coordinates `vars` (innermost first), updated together: a Tuple when there are several.
//
// Reductions whose innermost dim is reduced (rows: softmax, LayerNorm; not pooling's short
// windows) run in vectors: lane u of `partial` reduces the elements u, u + vec, u + 2 vec, ... of
// the row's whole vectors; then the lanes are combined (by the same update: sum, product, max and
// min all combine partial results as they combine elements), then the row's last (extent % vec)
// elements. (Whole vectors only: clamping the tail's indices instead made every load a gather.)
// Not for bool (any/all): bool vectors of this shape crashed LLVM's code with SIGILL.
//
// Float sums are blocked, so that their error grows with a block, not with the row or tensor (as
// libtorch's cascade sums): in lanes, each lane adds kBlockSteps steps at a time in `block_sums`
// in the input's precision, and `partial` adds the blocks; columns add blocks of kColumnBlock rows.
// What adds blocks, lanes and tails (`partial` in lanes, `acc`) adds in float64, where a few adds
// per block cost little (every element converted to float64 cost whole sums 20-40%). A lane
// adding 2^20 values of 0.1 in sequence was 1.5e-4 off; blocked, 2^24 values of 0.1f sum to
// within 6e-7 of the exact value (libtorch: 9e-7).
struct Accumulator {
  static constexpr int kBlockSteps = 64;
  static constexpr int kColumnBlock = 64;

  enum class Strategy {
    ChunksOfRows,     // a whole domain that is not one flat run: chunks of rows of dim 0, then combined
    RowsInLanes,      // the innermost dim reduced: in vector lanes, then the lanes and the tail combined
    ColumnsInBlocks,  // float sums with the innermost dim kept: blocks of rows, then the blocks added
    InSequence,       // anything else: one update over the reduced dims
  };

  Strategy strategy;
  Halide::Func acc, partial;
  Halide::Func block_sums;     // in lanes, float sums: partial's blocks of kBlockSteps steps (defined if so)
  Halide::RDom blocks;         // partial's update over block_sums: its blocks, then the rows' other reduced dims
  Halide::RDom rows;           // the reduced dims, when not in lanes
  Halide::RDom column_blocks;  // columns: acc's update over partial's blocks of rows (defined if so)
  Halide::Var block{"b"};      // columns: partial's block of rows
  bool lanes = false;
  bool chunked = false;  // a whole domain in chunks: partial([u,] chunk)
  Halide::Var chunk{"chunk"};
  Halide::Var u{"u"};    // in lanes: partial's lane
  Halide::RDom vectors;  // in lanes: the steps of stepping(), `width` elements of the innermost dim per step
  // In lanes, two vectors a step: two chains of dependent additions (or maxima) run side by side,
  // where one waited on each step's latency.
  int width = 0;
  std::vector<int> reduces;
  std::vector<ScalarType> dtypes;  // of `reduces`: what at() gives

  // The value of reduction `j` (the j-th of `reduces`) at the kept coordinates.
  Halide::Expr at(size_t j, const std::vector<Halide::Expr>& kept) const;
  // The stage whose innermost loop steps along the rows in lanes (prefetches go there).
  Halide::Stage stepping();

  // `element_context(coords)` gives the context in which the reduced values are evaluated at the
  // domain coordinates `coords`; `phase` names the Funcs (acc1, partial1, ...).
  // `chunk_rows`: a whole-domain reduction of more than one flat run (lower_reduction) sums chunks
  // of rows in parallel too.
  Accumulator(Lowering& L, std::vector<int> reducing, const std::vector<Halide::Var>& vars,
              const std::function<Lowering::Context(std::vector<Halide::Expr>)>& element_context, int phase = 1,
              bool chunk_rows = false);
};

}  // namespace kiln::codegen::halide
