#include "codegen/halide/schedule.h"

#include <algorithm>

#include "codegen/halide/ops.h"
#include "codegen/halide/schedule_params.h"

namespace kiln::codegen::halide {

using namespace Halide;
using ir::Op;

int native_lanes() { return kernel_target().natural_vector_size(Float(32)); }

namespace {

// Float32 lanes a kernel's element loops step by: the target's vector, or four of them (at most
// 32 lanes) where the kernel computes a float32 exp, log, tanh or erf. Those are long chains of
// dependent multiplies (a polynomial, a division), and several vectors a step let the chains
// overlap. On AVX2 (Zen 3, 2 threads): two 8-lane vectors took LayerNorm + GELU's backward kernel
// from 460-520 us to 390-430 and the softmax cross-entropy row kernel from 1330 to 1150; four
// took the GELU chain from 1.10-1.15 ms to 0.98-1.00 and softmax cross-entropy from 0.79-0.91 to
// 0.76-0.78 (LayerNorm + GELU unchanged; the first MLP step compiles 0.1-0.2 s longer). Plain
// arithmetic stays at the native width: at 16 lanes the CNN's copy and batch-norm kernels ran up
// to 2x slower (not looked into; their rows of 28 and 14 elements would end in longer tails).
// (hand_element_lanes, schedule_params.h)
int element_lanes(const fusion::Kernel& k) {
  if (schedule_params().element_lanes > 0) return schedule_params().element_lanes;
  return hand_element_lanes(k, native_lanes());
}

// Below this many elements a kernel runs on the calling thread: waking the pool costs more
// (ScheduleParams::serial_below, 1 << 16 by hand).
int serial_below() { return schedule_params().serial_below; }

Expr product(const std::vector<Param<int32_t>>& extents) {
  Expr n = 1;
  for (const auto& e : extents) n = n * e;
  return n;
}

// Parallel over `v` (an outermost loop) in tasks of at least task_elements() elements, `per_iteration`
// elements to an iteration: with Halide's pool, which took a lock per task, a task per row of 512
// floats made a row sum or a broadcast add 2-3x slower than the same work in chunks (kiln's pool,
// runtime/parallel.h, now runs them: a task there is a call and a shared counter's increment).
// (ScheduleParams::task_elements, 1 << 14 by hand)
int task_elements() { return schedule_params().task_elements; }
void parallel_tasks(Stage s, const Var& v, Expr per_iteration) {
  Var task("task");
  s.split(v, task, v, max(1, task_elements() / max(per_iteration, 1)), TailStrategy::GuardWithIf).parallel(task);
}

// Rows (the innermost dim) in the widest vectors that fit, the last one shifted inwards: a
// masked tail loads lane by lane, and short rows (an image's width) would be all tail. (Where
// the target masks its loads and stores, AVX-512, tuning tries the masked tail:
// ScheduleParams::masked_rows.)
void vectorize_rows(Stage s, const Var& x, Expr row, int vec) {
  if (schedule_params().masked_rows) {
    s.vectorize(x, vec, TailStrategy::GuardWithIf);
    return;
  }
  for (int w = vec; w >= 4; w /= 2) s.specialize(row >= w).vectorize(x, w, TailStrategy::ShiftInwards);
}

// A one-dimensional pointwise kernel's loop over vectors (schedule_rows_in_vectors).
Var vector_loop() { return Var("xv"); }

void schedule_rows_in_vectors(Func f, const std::vector<Var>& vars, int vec, Expr elements, Expr row,
                              Expr outer_extent) {
  if (vars.size() >= 2) {
    vectorize_rows(f.specialize(elements < serial_below()), vars[0], row, vec);
    parallel_tasks(f, vars.back(), elements / outer_extent);
    vectorize_rows(f, vars[0], row, vec);
    return;
  }
  // Both branches loop over vectors in `vector_loop()`, where shared values are computed.
  Var lane("lane");
  f.specialize(elements < serial_below())
      .split(vars[0], vector_loop(), lane, vec, TailStrategy::GuardWithIf)
      .vectorize(lane);
  // The kernel has at least serial_below() elements here, so shifting the last chunk and vector
  // inwards stays in bounds; a guarded tail costs masked loads in every vector.
  Var outer("xo"), inner("xi");
  f.split(vars[0], outer, inner, task_elements(), TailStrategy::ShiftInwards)
      .parallel(outer)
      .split(inner, vector_loop(), lane, vec, TailStrategy::ShiftInwards)
      .vectorize(lane);
}

// Tiles of side x side outputs over x0 and `across` (vars[1] by hand), one vector of x0 per row of
// the tile; tasks of whole rows of tiles, or of the outermost dim when that is not tiled. The
// tile's side is the native vector by hand, also where the kernel's other loops take wider steps
// (element_lanes). The tile's rows are a loop, not unrolled: unrolled, a transposed exp + tanh of
// 1024x1024 took Halide 5.1-5.8 s to compile in 16x16 tiles on AVX-512 (0.4 s as a loop, the run
// within noise), and an int64 chain with a remainder over a transposed operand 4.4 s (13 s on a
// loaded machine).
void schedule_tiles(Func f, const std::vector<Var>& vars, size_t across, int side, Expr elements,
                    Expr per_outer_iteration) {
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  for (Stage s : {Stage(f.specialize(elements < serial_below())), Stage(f)})
    s.tile(vars[0], vars[across], xo, yo, xi, yi, side, side, TailStrategy::GuardWithIf).vectorize(xi);
  if (across + 1 == vars.size())
    parallel_tasks(f, yo, per_outer_iteration * side);
  else
    parallel_tasks(f, vars.back(), per_outer_iteration);
}

// A few elements innermost (x0, extent e, known): unrolled inside 8-wide vectors along x1, so the
// e strided stores of each vector merge into dense interleaved ones.
// `per_outer`: the elements of one iteration of the outermost loop.
void schedule_tiny_inner(Func f, const std::vector<Var>& vars, int e, Expr x1_extent, Expr per_outer) {
  constexpr int kWidth = 8;
  f.bound(vars[0], 0, e).unroll(vars[0]);
  if (vars.size() >= 3) parallel_tasks(f, vars.back(), per_outer);
  Var xo("xo"), xi("xi");
  f.specialize(x1_extent >= kWidth)  // shifting the last vector inwards needs one whole vector
      .split(vars[1], xo, xi, kWidth, TailStrategy::ShiftInwards)
      .reorder(xi, vars[0], xo)
      .vectorize(xi);
}

// Stored values come in levels, each a Func that reads the ones before. A pointwise kernel
// computes its last kLevelsPerVector levels per vector, in registers (the benchmarks' deepest
// kernel has 4); earlier ones each in a loop of its own over the domain, in memory. Halide's
// compile time grows steeply with the number of Funcs nested in one loop: a recurrence with an
// output every step compiled 60 steps in 29 s with every level per vector, 4.4 s so.
constexpr size_t kLevelsPerVector = 4;

// Each of a pointwise kernel's stored levels (lower_kernel.cpp, SharedValues): the last
// kLevelsPerVector per vector of the first output's loop, earlier ones in loops of their own.
void schedule_stored_levels(const Lowering& L, PointwiseFuncs& f, int vec) {
  const std::vector<Var>& vars = f.vars;
  for (size_t level = 0; level < f.stored.size(); ++level) {
    Func& s = f.stored[level];
    if (level + kLevelsPerVector >= f.stored.size()) {
      // A rank-2 or more kernel loops over vectors in x0 (vectorize_rows).
      s.compute_at(f.outputs[0], vars.size() == 1 ? vector_loop() : vars[0]);
    } else {
      s.compute_root();
      parallel_tasks(s, vars.back(), product(L.extents) / L.extents[0]);
    }
    s.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  }
}

// Groups of outputs over one flat domain share one parallel loop over chunks (one dispatch to the
// thread pool, not one per group); within a chunk each group's loop runs in turn. compute_with
// does not mix with specializations, so tails are guarded rather than shifted inwards. The domain
// is cut into vectors first, and the vectors into chunks: the chunk's guard is then a test of the
// loop's index, which skips the vectors past the end. (Cut in the other order, the guard was part
// of the vectors' predicate, and every vector of a chunk ran as masked loads and stores: an Adam
// step's six 512-element parameters, in one 16K-element chunk, took 160 us against 7.) The chunk
// is a constant: one computed from the extents doubled the time Halide took to compile an Adam
// step's kernel.
void schedule_groups_in_shared_chunks(std::vector<Func>& groups, const Var& x, int vec) {
  Var outer("xo"), inner("xi"), vectors("xvecs"), lane("lane");  // not vector_loop(): no stored values here
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g]
        .split(x, vectors, lane, vec, TailStrategy::GuardWithIf)
        .split(vectors, outer, inner, std::max(1, task_elements() / vec), TailStrategy::GuardWithIf)
        .parallel(outer)
        .vectorize(lane);
    if (g > 0) groups[g].compute_with(groups[g - 1], outer);
  }
}

enum class PointwiseSchedule { GroupsInSharedChunks, TinyInnerDim, Tiles, TransposedTiles, RowsInVectors };

PointwiseSchedule choose_pointwise_schedule(const fusion::Kernel& k, const PointwiseFuncs& f) {
  if (f.outputs.size() > 1 && f.vars.size() == 1) return PointwiseSchedule::GroupsInSharedChunks;
  if (k.tiny_inner()) return PointwiseSchedule::TinyInnerDim;
  // A read that walks the outer dim contiguously and the inner one across rows (a transposed
  // view): the output in tiles, whose gathered loads hit the same cache lines row after row.
  // Of rank 3 or more (a batch of transposes), tiled when tuning asks (ScheduleParams::tiles).
  const int across = transposed_dim(k);
  if (!f.stored.empty() || across < 0) return PointwiseSchedule::RowsInVectors;
  if (f.vars.size() == 2) return PointwiseSchedule::Tiles;
  return schedule_params().tiles > 0 ? PointwiseSchedule::TransposedTiles : PointwiseSchedule::RowsInVectors;
}

// Rows narrow enough to be a pooling window's: one vector of outputs at a time, its accumulators
// on the stack; tasks of outer rows up to task_elements() (of 16 rows, a 2x2 pooling of 14-wide
// rows made 1792 tasks of 896 elements and spent more in the pool's locks than in the windows).
// Rows are short (a pooled width), so vectors are 8 or 4 wide and the last one shifts inwards: a
// masked tail would load lane by lane in every row (one masked vector of 8 or 16 outputs, tried as
// a tuning candidate on AVX-512, ran the CNN's 2x2 poolings 2.5-7x slower).
void schedule_windows_in_vectors(const Lowering& L, ReductionFuncs& f, const std::vector<size_t>& kept_dims) {
  const std::vector<Var>& vars = f.vars;
  Accumulator& A = f.accumulator;
  Func &out = f.out, &acc = A.acc;
  Var xo("xo"), xi("xi");
  if (vars.size() >= 2) parallel_tasks(out, vars.back(), product(L.extents) / L.extents[kept_dims.front()]);
  const Expr width = L.extents[kept_dims.back()];
  for (int w : {8, 4}) out.specialize(width >= w).split(vars[0], xo, xi, w, TailStrategy::ShiftInwards).vectorize(xi);
  out.split(vars[0], xo, xi, 4, TailStrategy::GuardWithIf);
  // The accumulators in vectors as wide as the outputs'.
  acc.compute_at(out, xo).store_in(MemoryType::Stack);
  for (int w : {8, 4}) {
    acc.specialize(width >= w).vectorize(vars[0], w, TailStrategy::GuardWithIf);
    Stage update = acc.update().specialize(width >= w).vectorize(vars[0], w, TailStrategy::GuardWithIf);
    for (int d = 0; d < A.rows.dimensions(); ++d)  // the window, its extents compiled in
      if (A.rows[d].extent().as<Internal::IntImm>()) update.unroll(A.rows[d]);
  }
  acc.vectorize(vars[0], 4, TailStrategy::GuardWithIf);
  acc.update().vectorize(vars[0], 4, TailStrategy::GuardWithIf);
}

// Columns of a 2-D domain: blocks of rows in parallel, each read row after row in runs of up to
// column_run columns, then acc adds the blocks in order (strips of columns read down every row
// stepped a page per row: ~40 GB/s on LayerNorm's weight gradients). A task takes consecutive
// blocks up to 8 task_elements() (a task per block spent 1M x 2 columns in the pool's locks), but
// at most a quarter of them, so that a few blocks still make three or four tasks (the MLP's
// LayerNorm gradients, 256 x 512 with GELU's derivative per element: 112 us as one task, 87-93 as
// four). Returns the elements acc's loop adds per iteration (the blocks summed at the root).
Expr sum_column_blocks_in_parallel(const Lowering& L, ReductionFuncs& f, int vec) {
  const fusion::Kernel& k = L.k;
  const std::vector<Var>& vars = f.vars;
  Accumulator& A = f.accumulator;
  const int column_run = schedule_params().column_run;
  Var xo("xo"), xi("xi"), bo("bo"), bi("bi"), tile("tile");
  const Expr run = min(L.extents[k.domain.size() - 1], column_run);  // a guarded run wastes its tail
  const Expr block_count = A.column_blocks.x.extent();
  const Expr blocks_per_task =
      max(1, min(8 * task_elements() / (Accumulator::kColumnBlock * run), (block_count + 3) / 4));
  A.partial.compute_root().vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  Stage blocks = A.partial.update();
  blocks.split(vars[0], xo, xi, run, TailStrategy::GuardWithIf)
      .split(A.block, bo, bi, blocks_per_task, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> loops{xi};
  for (int d = 0; d < A.rows.dimensions(); ++d) loops.emplace_back(A.rows[d]);
  for (const Var& v : {bi, xo, bo}) loops.emplace_back(v);
  blocks.reorder(loops).fuse(xo, bo, tile).vectorize(xi, vec, TailStrategy::GuardWithIf);
  blocks.specialize(product(L.extents) >= serial_below()).parallel(tile);
  A.acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(vars[0], A.column_blocks.x);
  return block_count * vec * schedule_params().column_vectors;
}

// Column sums: eight vectors of columns at a time (ScheduleParams::column_vectors), in rows, so that
// each row is read in runs of 8 vectors rather than one (one vector at a time ran at ~20 GB/s,
// striding down the rows). Returns
// the elements out's loop adds per iteration where that is not a row of kept dims (undefined if
// it is).
Expr schedule_columns_in_vectors(const Lowering& L, ReductionFuncs& f) {
  const std::vector<Var>& vars = f.vars;
  Accumulator& A = f.accumulator;
  Func& acc = A.acc;
  const int vec = native_lanes();
  Expr combine_per_iteration;
  acc.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{vars[0]};
  for (int d = 0; d < A.rows.dimensions(); ++d) order.emplace_back(A.rows[d]);
  if (A.column_blocks.defined() && vars.size() == 1) {
    combine_per_iteration = sum_column_blocks_in_parallel(L, f, vec);
  } else if (A.column_blocks.defined()) {  // each block of rows at acc's loop over blocks
    acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(vars[0], A.column_blocks.x);
    A.partial.compute_at(acc, A.column_blocks.x)
        .store_at(f.out, vars.back())  // one buffer for all blocks, on the stack
        .store_in(MemoryType::Stack)
        .vectorize(vars[0], vec, TailStrategy::GuardWithIf);
    A.partial.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(order);
  } else {
    acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(order);
  }
  Var block("block");
  f.out.split(vars[0], vars[0], block, vec * schedule_params().column_vectors, TailStrategy::GuardWithIf)
      .vectorize(block, vec, TailStrategy::GuardWithIf);
  return combine_per_iteration;
}

// Parallel over the outermost kept dim, the accumulators computed per iteration of it; columns
// (the innermost dim kept) in vectors.
void schedule_kept_dims_in_parallel(const Lowering& L, ReductionFuncs& f, const std::vector<size_t>& kept_dims) {
  const fusion::Kernel& k = L.k;
  const std::vector<Var>& vars = f.vars;
  const int vec = native_lanes();
  f.accumulator.acc.compute_at(f.out, vars.back());
  const Expr combine_per_iteration = k.reduced.back() ? Expr() : schedule_columns_in_vectors(L, f);
  // An iteration of the outermost kept loop reduces its rows; when that loop is the columns'
  // (split into blocks above), a block's.
  Expr per_iteration = product(L.extents) / L.extents[kept_dims.front()];
  if (vars.size() == 1 && !k.reduced.back()) per_iteration *= vec * schedule_params().column_vectors;
  if (combine_per_iteration.defined()) per_iteration = combine_per_iteration;
  parallel_tasks(f.out.specialize(product(L.extents) >= serial_below()), vars.back(), per_iteration);
}

enum class ReductionSchedule { OneValue, WindowsInVectors, KeptDimsInParallel };

// Narrow rows (pooling windows) vectorize the innermost kept dim too, where every read steps
// through it by a compiled-in stride (no gathers). Floating-point ones only: bool reductions
// crashed with SIGILL under this schedule. (Vectorizing a kept dim outside a reduced one means
// gathers otherwise, as its stride is an argument: measured slower than scalar loops on pooling.)
ReductionSchedule choose_reduction_schedule(const fusion::Kernel& k, const std::vector<size_t>& kept_dims) {
  bool vector_narrow_rows = k.narrow_rows() && !kept_dims.empty();
  for (int j : k.reduces) vector_narrow_rows &= is_floating(k.nodes[j].node->dtype);
  if (vector_narrow_rows)
    for (const auto& read : k.reads) vector_narrow_rows &= stride_class(read.strides[kept_dims.back()]) != 's';
  if (vector_narrow_rows) return ReductionSchedule::WindowsInVectors;
  return kept_dims.empty() ? ReductionSchedule::OneValue : ReductionSchedule::KeptDimsInParallel;
}

// The reads that the prologues of `reducing` take along the rows (per element, not per row),
// values stored per row (`stored`) aside.
std::vector<int> streamed_reads(const fusion::Kernel& k, const std::vector<int>& reducing,
                                const std::vector<bool>& stored) {
  std::vector<int> reads;
  std::vector<bool> seen(k.nodes.size(), false);
  std::vector<int> stack(reducing);
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    for (int a : k.nodes[size_t(i)].args) {
      if (!fusion::is_read(a)) {
        if (!k.nodes[size_t(a)].per_row && !stored[size_t(a)] && !seen[size_t(a)]) {
          seen[size_t(a)] = true;
          stack.push_back(a);
        }
        continue;
      }
      const int r = fusion::read_index(a);
      if (stride_class(k.reads[size_t(r)].strides.back()) != '0' &&
          std::find(reads.begin(), reads.end(), r) == reads.end())
        reads.push_back(r);
    }
  }
  return reads;
}

}  // namespace

void schedule_lanes(Accumulator& A) {
  if (!A.lanes) return;
  // Two native vectors a step, not one of twice the width: on AVX2 a 16-lane compare (a row's
  // max) went through byte packing (the softmax cross-entropy row kernel 1447 -> 1332 us). The
  // two vectors inside the step's loop: outside, each half of the row was a loop of its own.
  // The steps along a row, then the row's other reduced dims, outermost last (each named: a dim
  // left out of the reorder kept its place inside the two vectors' loop, and the CNN's
  // per-channel sums, [64]x32x[784], stepped down the batch at 100 KB a load, each vector in a
  // loop of its own, three times slower than row by row).
  Var uo("uo"), ui("ui");
  auto two_vectors = [&](Stage s) -> Stage { return s.split(A.u, uo, ui, A.width / 2).vectorize(ui).unroll(uo); };
  auto in_order = [&](const RDom& r) {
    std::vector<VarOrRVar> order{ui, uo};
    for (int d = 0; d < r.dimensions(); ++d) order.emplace_back(r[d]);
    return order;
  };
  two_vectors(A.partial);
  if (A.block_sums.defined()) {
    two_vectors(A.partial.update()).reorder(in_order(A.blocks));
    A.block_sums.compute_at(A.partial, A.blocks.x);
    two_vectors(A.block_sums);
    two_vectors(A.block_sums.update()).reorder(in_order(A.vectors));
  } else {
    two_vectors(A.partial.update()).reorder(in_order(A.vectors));
  }
}

void schedule_pointwise_kernel(const Lowering& L, PointwiseFuncs& f) {
  const fusion::Kernel& k = L.k;
  const std::vector<Var>& vars = f.vars;
  const int vec = element_lanes(k);
  switch (choose_pointwise_schedule(k, f)) {
    case PointwiseSchedule::GroupsInSharedChunks: schedule_groups_in_shared_chunks(f.outputs, vars[0], vec); break;
    case PointwiseSchedule::TinyInnerDim:
      for (Func& out : f.outputs)
        schedule_tiny_inner(out, vars, int(k.tiny_inner()), L.extents[k.domain.size() - 2],
                            product(L.extents) / L.extents[0]);
      break;
    case PointwiseSchedule::Tiles:
      for (Func& out : f.outputs)
        schedule_tiles(out, vars, 1, schedule_params().tile > 0 ? schedule_params().tile : native_lanes(),
                       product(L.extents), L.extents[1]);
      break;
    case PointwiseSchedule::TransposedTiles:
      for (Func& out : f.outputs)
        schedule_tiles(out, vars, k.domain.size() - 1 - size_t(transposed_dim(k)), schedule_params().tiles,
                       product(L.extents), product(L.extents) / L.extents[0]);
      break;
    case PointwiseSchedule::RowsInVectors:
      for (Func& out : f.outputs)
        schedule_rows_in_vectors(out, vars, vec, product(L.extents), L.extents[k.domain.size() - 1], L.extents[0]);
      break;
  }
  schedule_stored_levels(L, f, vec);
}

void schedule_reduction_kernel(const Lowering& L, ReductionFuncs& f) {
  const fusion::Kernel& k = L.k;
  const std::vector<Var>& vars = f.vars;
  Accumulator& A = f.accumulator;
  schedule_lanes(A);
  // Rows in lanes (above) computed per iteration of the outermost kept loop. A reduction to one
  // value computes its lanes once, at the root (inlined, each lane was a strided scalar pass of
  // its own: 25x slower), its chunks in parallel when it has several.
  if (A.lanes && !vars.empty()) A.partial.compute_at(f.out, vars.back());
  if ((A.lanes || A.chunked) && vars.empty()) A.partial.compute_root();
  if (A.chunked) A.partial.update().specialize(product(L.extents) >= serial_below()).parallel(A.chunk);
  std::vector<size_t> kept_dims;
  for (size_t d = 0; d < k.domain.size(); ++d)
    if (!k.reduced[d]) kept_dims.push_back(d);
  switch (choose_reduction_schedule(k, kept_dims)) {
    case ReductionSchedule::OneValue: break;
    case ReductionSchedule::WindowsInVectors: schedule_windows_in_vectors(L, f, kept_dims); break;
    case ReductionSchedule::KeptDimsInParallel: schedule_kept_dims_in_parallel(L, f, kept_dims); break;
  }
}

void schedule_row_kernel(const Lowering& L, RowFuncs& f) {
  const fusion::Kernel& k = L.k;
  const size_t rank = k.domain.size();
  const int vec = element_lanes(k);
  const std::vector<Var>& vars = f.vars;
  const std::vector<Var>& kept = f.kept;
  for (size_t p = 0; p < f.accumulators.size(); ++p) {
    Accumulator& A = f.accumulators[p];
    schedule_lanes(A);
    // A row is read from memory in the first phase; the phases after it compute from cache and
    // leave memory idle. So the first phase fetches the next row too, a vector ahead per vector
    // (one row ahead when rows are contiguous), and the next row's first phase finds it in cache.
    if (p == 0 && A.lanes)
      for (int r : streamed_reads(k, A.reduces, f.stored_nodes))
        A.stepping().prefetch(L.inputs[size_t(r)], A.vectors[0], A.vectors[0], L.extents[rank - 1] / A.width,
                              PrefetchBoundStrategy::NonFaulting);
  }

  // Rows in parallel; in each, the accumulators and stored values, then the outputs. Per-row
  // outputs are written in the same loop (compute_with), not in a loop of their own that would
  // reduce every row again.
  Func main = f.per_element ? f.out_elements : f.out_rows;
  const bool two_outputs = f.per_element && f.per_row;
  auto once_per_row = [&](Func s) {  // one row only (its kept dims coalesced away): at the root
    if (kept.empty()) {
      s.compute_root();
      return;
    }
    s.compute_at(main, kept.front());
    // Each turn of the loop the two outputs share (compute_with, below) is the same row of both,
    // but Halide sizes what it computes there for the span between the two outputs' rows: buffers
    // sized at run time (a malloc and a free per row) and sums kept in memory, not registers.
    if (two_outputs)
      for (const Var& v : kept) s.bound_extent(v, 1);
  };
  if (f.per_element) f.out_elements.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  for (Func& s : f.stored) {
    once_per_row(s);
    s.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
    // Asked for the stack, where a row fits Halide's stack budget (rows over 16 KiB still go to
    // the heap): on the heap it was a malloc and a free per row.
    s.store_in(MemoryType::Stack);
  }
  for (auto& [i, s] : L.row_values) once_per_row(s);
  for (auto& A : f.accumulators) {
    once_per_row(A.acc);
    if (A.lanes) once_per_row(A.partial);
  }
  std::vector<Func> outputs = f.outputs();
  if (!kept.empty()) {
    for (Func& out : outputs) parallel_tasks(out, kept.back(), product(L.extents) / L.extents[0]);
    if (outputs.size() == 2) {
      f.out_rows.compute_with(f.out_elements, kept.front());
      for (Func& out : outputs)  // a Tuple's other buffers follow its first
        for (int d = 0; d < out.dimensions(); ++d) out.output_buffers()[0].dim(d).set_min(0);
      for (size_t j = 0; j < kept.size(); ++j)
        f.out_rows.output_buffers()[0].dim(int(j)).set_extent(
            f.out_elements.output_buffers()[0].dim(int(j + f.reduced_count)).extent());
    }
  }
}

}  // namespace kiln::codegen::halide
