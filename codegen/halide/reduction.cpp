#include "codegen/halide/reduction.h"

#include <algorithm>

#include "codegen/halide/ops.h"
#include "codegen/halide/schedule.h"
#include "codegen/halide/schedule_params.h"

namespace kiln::codegen::halide {
namespace {

using namespace Halide;
using ir::Op;

// Whether every one of `reduces` is a floating-point sum.
bool floating_sums(const fusion::Kernel& k, const std::vector<int>& reduces) {
  return std::all_of(reduces.begin(), reduces.end(), [&](int j) {
    return k.nodes[size_t(j)].node->op == Op::Sum && value_type(k.nodes[size_t(j)].node->dtype).is_float();
  });
}

// Defines an Accumulator's Funcs: what its strategies share, and one function per strategy.
class AccumulatorDefinition {
 public:
  AccumulatorDefinition(Accumulator& A, Lowering& L, const std::vector<Var>& vars,
                        const std::function<Lowering::Context(std::vector<Expr>)>& element_context, int phase)
      : A(A),
        L(L),
        k(L.k),
        vars(vars),
        element_context(element_context),
        phase(phase),
        rank(k.domain.size()),
        n(A.reduces.size()) {
    for (size_t d = 0; d < rank; ++d) (k.reduced[d] ? reduced_dims : kept_dims).push_back(d);
    outer_dim = reduced_dims.empty() ? 0 : reduced_dims.front();
    bool numeric = true;
    for (int j : A.reduces) numeric &= !value_type(k.nodes[j].node->dtype).is_bool();
    A.lanes = k.reduced.back() && numeric && !k.narrow_rows();
    A.width = schedule_params().reduction_vectors * native_lanes();
    inner_extent = L.extents[rank - 1];
    whole = inner_extent / A.width * A.width;
    lhs.assign(vars.begin(), vars.end());
    sums_in_blocks = floating_sums(k, A.reduces) && !k.narrow_rows();  // windows are short
    for (int j : A.reduces) {
      A.dtypes.push_back(k.nodes[j].node->dtype);
      inits.push_back(reduction_initial(*k.nodes[j].node));
      wide_inits.push_back(sums_in_blocks ? cast(Float(64), inits.back()) : inits.back());
    }
  }

  // The one place that chooses how the reductions are computed.
  Accumulator::Strategy choose(bool chunk_rows) const {
    using S = Accumulator::Strategy;
    if (chunk_rows && vars.empty() && !(A.lanes && rank == 1)) return S::ChunksOfRows;
    if (A.lanes) return S::RowsInLanes;
    if (!k.reduced.back() && floating_sums(k, A.reduces)) return S::ColumnsInBlocks;
    return S::InSequence;
  }

  void define_funcs(Accumulator::Strategy strategy) {
    define(A.acc, vars, wide_inits);
    switch (strategy) {
      case Accumulator::Strategy::ChunksOfRows: return reduce_chunks_of_rows();
      case Accumulator::Strategy::RowsInLanes: return reduce_rows_in_lanes();
      case Accumulator::Strategy::ColumnsInBlocks: return sum_columns_in_blocks();
      case Accumulator::Strategy::InSequence: return reduce_in_sequence();
    }
  }

 private:
  // A whole domain that is not one flat run of vectors: chunks of rows of dim 0, partial(u, c) in
  // lanes or partial(c), so that chunks run in parallel and each accumulator sums a bounded run
  // (about ScheduleParams::chunk_steps values per lane or scalar); then the chunks are combined.
  void reduce_chunks_of_rows() {
    A.chunked = true;
    Expr row_elements = 1;
    for (size_t d = 1; d < rank; ++d) row_elements = row_elements * L.extents[d];
    const Expr rows_per_chunk = max(1, schedule_params().chunk_steps * (A.lanes ? A.width : 1) / max(row_elements, 1));
    const Expr chunks = (L.extents[0] + rows_per_chunk - 1) / rows_per_chunk;
    RDom r = reduced_domain(Range(0, inner_extent / A.width), Range(0, rows_per_chunk));
    r.where(A.chunk * rows_per_chunk + r[int(rank) - 1] < L.extents[0]);
    std::vector<Var> p_lhs;
    if (A.lanes) p_lhs.push_back(A.u);
    p_lhs.push_back(A.chunk);
    define(A.partial, p_lhs, wide_inits);  // rare (a strided view's sum): float64 throughout
    define_update(A.partial, std::vector<Expr>(p_lhs.begin(), p_lhs.end()),
                  values_at(r, A.lanes ? r[0] * A.width + A.u : Expr(), A.chunk * rows_per_chunk));
    RDom combined = A.lanes ? RDom(0, A.width, 0, chunks) : RDom(0, chunks);
    std::vector<Expr> from{combined.x};
    if (A.lanes) from.push_back(combined.y);
    combine_partials(from, r);
  }

  // Rows in lanes. A whole flat domain (chunked) splits its steps into chunks c of ScheduleParams::chunk_steps:
  // partial(u, c), so that the chunks run in parallel; then every chunk's lanes are combined.
  void reduce_rows_in_lanes() {
    A.chunked = rank == 1;
    std::vector<Var> p_lhs{A.u};
    RDom r, combined;
    std::vector<Expr> from;
    const Expr whole_steps = inner_extent / A.width;
    if (A.chunked) {
      p_lhs.push_back(A.chunk);
      const Expr first_step = A.chunk * schedule_params().chunk_steps;
      r = define_lanes(p_lhs, first_step, whole_steps - first_step, schedule_params().chunk_steps);
      combined = RDom(0, A.width, 0, (whole_steps + schedule_params().chunk_steps - 1) / schedule_params().chunk_steps);
      from = {combined.x, combined.y};
    } else {
      p_lhs.insert(p_lhs.end(), vars.begin(), vars.end());
      r = define_lanes(p_lhs, 0, whole_steps, whole_steps);
      combined = RDom(0, A.width);
      from = {combined.x};
      from.insert(from.end(), vars.begin(), vars.end());
    }
    combine_partials(from, r);
  }

  // Columns (the innermost dim kept): partial(..., b) adds the rows of block b (kColumnBlock of
  // the outermost reduced dim: dim 0 for a bias's gradient, a middle dim for sum(1) of a 3-D
  // tensor), then acc adds the blocks. A float32 column added row after row drifts with its length
  // (5000 rows of randn were 2.7e-4 off). Sums only: a product in blocks can meet 0 * inf (a zero
  // in one block, an overflow in another) where row after row gives 0.
  void sum_columns_in_blocks() {
    const Var& b = A.block;
    const Expr outer_extent = L.extents[outer_dim];
    A.rows = reduced_domain(Range(), Range(0, Accumulator::kColumnBlock));
    A.rows.where(b * Accumulator::kColumnBlock + A.rows[A.rows.dimensions() - 1] < outer_extent);
    std::vector<Var> p_lhs(vars.begin(), vars.end());
    p_lhs.push_back(b);
    define(A.partial, p_lhs, inits);
    define_update(A.partial, std::vector<Expr>(p_lhs.begin(), p_lhs.end()),
                  values_at(A.rows, Expr(), b * Accumulator::kColumnBlock));
    A.column_blocks = RDom(0, (outer_extent + Accumulator::kColumnBlock - 1) / Accumulator::kColumnBlock);
    std::vector<Expr> from(vars.begin(), vars.end());
    from.push_back(A.column_blocks.x);
    combine_partials(from, A.rows);
  }

  void reduce_in_sequence() {
    A.rows = reduced_domain(Range(0, inner_extent));
    define_update(A.acc, lhs, values_at(A.rows, Expr()));
  }

  // The reduced dims as an RDom, innermost first; in lanes, `inner` is the innermost one's range;
  // `outer`, if given, the outermost reduced dim's (a chunk of rows, a block of columns' rows).
  RDom reduced_domain(Range inner, Range outer = Range()) const {
    Region region;
    for (auto it = reduced_dims.rbegin(); it != reduced_dims.rend(); ++it)
      region.push_back(A.lanes && *it == rank - 1                ? inner
                       : *it == outer_dim && outer.min.defined() ? outer
                       : k.window_extent(*it)                    ? Range(0, int(k.window_extent(*it)))
                                                                 : Range(0, L.extents[*it]));
    return RDom(region);
  }

  // The values the reducing nodes take at r (the innermost reduced coordinate given by `inner`;
  // the outermost reduced dim's offset by `first_row`).
  std::vector<Expr> values_at(const RDom& r, Expr inner, Expr first_row = Expr()) {
    std::vector<Expr> reduced;
    for (int d = 0; d < r.dimensions(); ++d) reduced.emplace_back(r[d]);
    return values_at(r, reduced, inner, first_row);
  }
  // As above, the reduced dims' coordinates given (innermost first); the update is over r.
  std::vector<Expr> values_at(const RDom& r, const std::vector<Expr>& reduced, Expr inner, Expr first_row) {
    std::vector<Expr> coords(rank);
    for (size_t i = 0; i < kept_dims.size(); ++i) coords[kept_dims[i]] = vars[kept_dims.size() - 1 - i];
    for (size_t i = 0; i < reduced_dims.size(); ++i) coords[reduced_dims[i]] = reduced[reduced_dims.size() - 1 - i];
    if (first_row.defined()) coords[outer_dim] = coords[outer_dim] + first_row;
    if (A.lanes) coords[rank - 1] = inner;
    Lowering::Context prologue = element_context(coords);
    std::vector<Expr> xs;
    for (int j : A.reduces) {
      const int arg = k.nodes[j].args[0];
      Expr x = fusion::is_read(arg) ? L.load(fusion::read_index(arg), coords) : L.value(arg, prologue);
      x = convert(x, k.nodes[j].node->dtype);
      // An update that does not mention the RDom runs once, not once per element: a prologue of
      // constants only (the gradient of a broadcast scalar) must still be summed over the domain.
      // (Only then: strict_float keeps x + 0, an add per element.)
      bool uses_r = false;
      for (int d = 0; d < r.dimensions(); ++d) uses_r |= Internal::expr_uses_var(x, r[d].name());
      if (!reduced_dims.empty() && !x.type().is_bool() && !uses_r) x = x + cast(x.type(), r[0] * 0);
      xs.push_back(x);
    }
    return xs;
  }

  // f(at) updated by x, each value converted to f's type.
  void define_update(Func& f, const std::vector<Expr>& at, const std::vector<Expr>& x) {
    std::vector<Expr> ups;
    for (size_t j = 0; j < n; ++j) {
      const Expr current = tuple_element(f, at, j);
      ups.push_back(reduction_update(*k.nodes[A.reduces[j]].node, current, cast(current.type(), x[j])));
    }
    if (n == 1)
      f(at) = ups[0];
    else
      f(at) = Tuple(ups);
  }

  // In lanes: partial(p_lhs) over the innermost steps [first, first + count) (count at most
  // `bound`), each lane's steps in blocks when the reductions are float sums. Returns the update's
  // domain.
  RDom define_lanes(const std::vector<Var>& p_lhs, Expr first, Expr count, Expr bound) {
    std::vector<Expr> p_at(p_lhs.begin(), p_lhs.end());
    if (!sums_in_blocks) {
      RDom r = reduced_domain(Range(0, bound));
      if (!Internal::can_prove(bound <= count)) r.where(r[0] < count);
      define(A.partial, p_lhs, inits);
      define_update(A.partial, p_at, values_at(r, (first + r[0]) * A.width + A.u));
      return r;
    }
    // A block is kBlockSteps steps: of one row, or of a group of rows that short (a batch of
    // 14x14 images: rows of 6 steps, 10 to a block). The rows' other reduced dims (a batch, an
    // image's rows) are pure dims of block_sums, which partial adds over with the blocks (blocks
    // of 64 steps down every row of a [64]x32x[784] batch were 2.5e-7 off; a block per short row
    // would add its lanes in float64 every few steps).
    constexpr int kSteps = Accumulator::kBlockSteps;
    Var b("blk");
    std::vector<Var> b_lhs(p_lhs);
    b_lhs.push_back(b);
    Region blocks{Range(0, (bound + kSteps - 1) / kSteps)};
    std::vector<Expr> reduced{Expr()};  // innermost first; the first set below
    RDom r;
    if (reduced_dims.size() == 1) {
      r = RDom(0, kSteps);
    } else {
      const Expr rows = L.extents[reduced_dims[reduced_dims.size() - 2]];
      const Expr group = max(1, kSteps / max(count, 1));
      r = RDom(0, kSteps, 0, group);
      b_lhs.emplace_back("rows");
      r.where(b_lhs.back() * group + r[1] < rows);
      reduced.push_back(b_lhs.back() * group + r[1]);
      blocks.emplace_back(0, (rows + group - 1) / group);
    }
    for (size_t i = reduced_dims.size() < 2 ? 0 : reduced_dims.size() - 2; i-- > 0;) {
      b_lhs.emplace_back("row" + std::to_string(i));
      reduced.push_back(b_lhs.back());
      blocks.emplace_back(0, L.extents[reduced_dims[i]]);
    }
    r.where(b * kSteps + r[0] < count);
    reduced[0] = r[0];
    A.block_sums = Func("block_sums" + std::to_string(phase));
    define(A.block_sums, b_lhs, inits);
    define_update(A.block_sums, std::vector<Expr>(b_lhs.begin(), b_lhs.end()),
                  values_at(r, reduced, (first + b * kSteps + r[0]) * A.width + A.u, Expr()));
    A.blocks = RDom(blocks);
    std::vector<Expr> block_at(p_at);
    for (int d = 0; d < A.blocks.dimensions(); ++d) block_at.push_back(A.blocks[d]);
    std::vector<Expr> sums;
    for (size_t j = 0; j < n; ++j) sums.push_back(tuple_element(A.block_sums, block_at, j));
    define(A.partial, p_lhs, wide_inits);
    define_update(A.partial, p_at, sums);
    return r;
  }

  // acc takes the partials read at `from` (over an RDom), then, in lanes, each row's last
  // (extent % width) elements; `r` is partial's update domain.
  void combine_partials(const std::vector<Expr>& from, const RDom& r) {
    std::vector<Expr> partials;
    for (size_t j = 0; j < n; ++j) partials.push_back(tuple_element(A.partial, from, j));
    define_update(A.acc, lhs, partials);
    if (A.lanes) {
      RDom tail = reduced_domain(Range(whole, inner_extent - whole));
      define_update(A.acc, lhs, values_at(tail, tail[0]));
    }
    A.vectors = r;
  }

  Accumulator& A;
  Lowering& L;
  const fusion::Kernel& k;
  const std::vector<Var>& vars;
  const std::function<Lowering::Context(std::vector<Expr>)>& element_context;
  const int phase;
  const size_t rank, n;
  std::vector<size_t> kept_dims, reduced_dims;
  size_t outer_dim = 0;  // the outermost reduced
  Expr inner_extent;
  Expr whole;  // elements of a row in whole steps
  std::vector<Expr> lhs;
  bool sums_in_blocks = false;
  // Initial values in the input's precision (`inits`) and in what adds blocks (`wide_inits`:
  // float64 for float sums).
  std::vector<Expr> inits, wide_inits;
};

}  // namespace

Expr Accumulator::at(size_t j, const std::vector<Expr>& kept) const {
  return cast(value_type(dtypes[j]), tuple_element(acc, kept, j));
}

Stage Accumulator::stepping() { return block_sums.defined() ? block_sums.update() : partial.update(); }

Accumulator::Accumulator(Lowering& L, std::vector<int> reducing, const std::vector<Var>& vars,
                         const std::function<Lowering::Context(std::vector<Expr>)>& element_context, int phase,
                         bool chunk_rows)
    : acc("acc" + std::to_string(phase)), partial("partial" + std::to_string(phase)), reduces(std::move(reducing)) {
  AccumulatorDefinition definition(*this, L, vars, element_context, phase);
  strategy = definition.choose(chunk_rows);
  definition.define_funcs(strategy);
}

}  // namespace kiln::codegen::halide
