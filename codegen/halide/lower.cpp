#include "codegen/halide/lower.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "codegen/halide/arguments.h"
#include "codegen/halide/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {
namespace {

using namespace Halide;
using ir::Op;

// Builds the expression of every kernel node at the given domain coordinates.
struct Lowering {
  const fusion::Kernel& k;
  std::vector<ImageParam> inputs;
  std::vector<Param<int32_t>> extents;
  std::vector<Param<int32_t>> offsets;
  std::vector<std::map<size_t, Param<int32_t>>> strides;  // per read: dim -> param
  std::map<int, Expr> consts;  // node index -> its Const's value: a float64 Param, int64 for an int64 Const
  std::vector<Argument> arguments;

  explicit Lowering(const fusion::Kernel& kernel) : k(kernel) {
    const size_t rank = k.domain.size();
    for (size_t r = 0; r < k.reads.size(); ++r)
      inputs.emplace_back(storage_type(k.reads[r].node->dtype), 1, "in" + std::to_string(r));
    for (size_t d = 0; d < rank; ++d) extents.emplace_back("extent" + std::to_string(d));
    strides.resize(k.reads.size());
    for (size_t r = 0; r < k.reads.size(); ++r) {
      offsets.emplace_back("offset" + std::to_string(r));
      for (size_t d = 0; d < rank; ++d)
        if (stride_class(k.reads[r].strides[d]) == 's')
          strides[r].emplace(d, Param<int32_t>("stride" + std::to_string(r) + "_" + std::to_string(d)));
    }
    std::vector<Argument> const_arguments;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      const ir::Node& n = *k.nodes[i].node;
      if (n.op != Op::Const) continue;
      const std::string name = "const" + std::to_string(i);
      if (n.dtype == kLong) {  // exact: a float64 is not above 2^53
        Param<int64_t> p(name);
        consts[int(i)] = p;
        const_arguments.push_back(p);
      } else {
        Param<double> p(name);
        consts[int(i)] = p;
        const_arguments.push_back(p);
      }
    }
    // The order of arguments/arguments.h.
    for (auto& in : inputs) arguments.push_back(in);
    for (auto& e : extents) arguments.push_back(e);
    for (size_t r = 0; r < k.reads.size(); ++r) {
      arguments.push_back(offsets[r]);
      for (auto& [d, p] : strides[r]) arguments.push_back(p);
    }
    arguments.insert(arguments.end(), const_arguments.begin(), const_arguments.end());
    for (size_t i = 0; i < k.reads.size(); ++i) {
      // Inputs are read through computed indices: tell Halide their one dimension starts at 0.
      inputs[i].dim(0).set_min(0);
      inputs[i].dim(0).set_stride(1);
    }
  }

  Expr load(int r, const std::vector<Expr>& coords) {
    Expr index = offsets[r];
    for (size_t d = 0; d < coords.size(); ++d) {
      const char c = stride_class(k.reads[r].strides[d]);
      if (c == '1') index = index + coords[d];
      if (c == '2') index = index + coords[d] * 2;
      if (c == 's') index = index + coords[d] * strides[r].at(d);
    }
    return to_value(inputs[r](index), k.reads[r].node->dtype);
  }

  // A value stored per row: element `index` of `f`'s Tuple, or all of `f` (index -1).
  struct Stored {
    Func f;
    int index;
  };
  struct Context {
    std::vector<Expr> coords;
    std::vector<Expr> memo;
    std::map<int, Expr> reduced;                    // in an epilogue: the reductions' values, by node
    Context* rows = nullptr;                        // per element of a row kernel: where per-row values are
    const std::map<int, Stored>* stored = nullptr;  // a row kernel's values stored per row
  };
  // A row kernel's per-row values that its elements read, each computed once per row (inline, the
  // loops over a row's elements would compute them again at every vector), at `row_vars`.
  std::map<int, Func> row_values;
  std::vector<Var> row_vars;

  // The value of kernel node `i` at `c.coords` (one of a few coordinate sets: the domain's, or a
  // reduction's output coordinates for its epilogue), memoized per set so that Halide
  // expressions share their common subtrees.
  Expr value(int i, Context& c) {
    if (k.nodes[i].per_row && c.rows) {
      if (ir::op_kind(k.nodes[i].node->op) == ir::OpKind::Reduce) return value(i, *c.rows);  // a Func's already
      auto it = row_values.find(i);
      if (it == row_values.end()) {
        Func f("row_value" + std::to_string(i));
        f(row_vars) = value(i, *c.rows);
        it = row_values.emplace(i, f).first;
      }
      return it->second(std::vector<Expr>(row_vars.begin(), row_vars.end()));
    }
    if (c.memo.empty()) c.memo.resize(k.nodes.size());
    if (c.memo[i].defined()) return c.memo[i];
    const ir::Node& n = *k.nodes[i].node;
    Expr e;
    const Stored* stored = nullptr;
    if (c.stored)
      if (auto it = c.stored->find(i); it != c.stored->end()) stored = &it->second;
    if (stored) {
      FuncRef ref = stored->f(std::vector<Expr>(c.coords.rbegin(), c.coords.rend()));  // innermost first
      e = stored->index < 0 ? Expr(ref) : Expr(ref[stored->index]);
    } else if (n.op == Op::Const) {
      e = convert(consts.at(i), n.dtype);
    } else if (ir::op_kind(n.op) == ir::OpKind::Reduce) {
      KILN_CHECK(c.reduced.count(i), "halide: a reduction read outside its epilogue");
      e = c.reduced.at(i);
    } else {
      std::vector<Expr> args;
      for (int a : k.nodes[i].args)
        args.push_back(fusion::is_read(a) ? load(fusion::read_index(a), c.coords) : value(a, c));
      e = lower_op(n, args);
    }
    return c.memo[i] = e;
  }
};

// Halide's vars, innermost first: domain dim d (outermost first) is var rank-1-d.
std::vector<Var> make_vars(size_t rank) {
  std::vector<Var> vars;
  for (size_t i = 0; i < rank; ++i) vars.emplace_back("x" + std::to_string(i));
  return vars;
}

// Defines f at lhs as one value, or as a Tuple of several (a pipeline writing several outputs, or
// accumulating several reductions, in one loop).
void define(Func& f, const std::vector<Var>& lhs, const std::vector<Expr>& values) {
  if (values.size() == 1)
    f(lhs) = values[0];
  else
    f(lhs) = Tuple(values);
}

// Float32 lanes of the target's vector.
int native_lanes() { return kernel_target().natural_vector_size(Float(32)); }

// Float32 lanes a kernel's element loops step by: the target's vector, or four of them (at most
// 32 lanes) where the kernel computes a float32 exp, log, tanh or erf. Those are long chains of
// dependent multiplies (a polynomial, a division), and several vectors a step let the chains
// overlap. On AVX2 (Zen 3, 2 threads): two 8-lane vectors took LayerNorm + GELU's backward kernel
// from 460-520 us to 390-430 and the softmax cross-entropy row kernel from 1330 to 1150; four
// took the GELU chain from 1.10-1.15 ms to 0.98-1.00 and softmax cross-entropy from 0.79-0.91 to
// 0.76-0.78 (LayerNorm + GELU unchanged; the first MLP step compiles 0.1-0.2 s longer). Plain
// arithmetic stays at the native width: at 16 lanes the CNN's copy and batch-norm kernels ran up
// to 2x slower (not looked into; their rows of 28 and 14 elements would end in longer tails).
int element_lanes(const fusion::Kernel& k) {
  const int native = native_lanes();
  for (const auto& kn : k.nodes) {
    if (float32_polynomial(kn.node->op) && kn.node->dtype == kFloat) return std::max(native, std::min(4 * native, 32));
  }
  return native;
}

// Below this many elements a kernel runs on the calling thread: waking the pool costs more.
constexpr int kSerialBelow = 1 << 16;

Expr product(const std::vector<Param<int32_t>>& extents) {
  Expr n = 1;
  for (const auto& e : extents) n = n * e;
  return n;
}

// Parallel over `v` (an outermost loop) in tasks of at least kTaskElements elements, `per_iteration`
// elements to an iteration: with Halide's pool, which took a lock per task, a task per row of 512
// floats made a row sum or a broadcast add 2-3x slower than the same work in chunks (kiln's pool,
// runtime/parallel.h, now runs them: a task there is a call and a shared counter's increment).
constexpr int kTaskElements = 1 << 14;
void parallel_tasks(Stage s, const Var& v, Expr per_iteration) {
  Var task("task");
  s.split(v, task, v, max(1, kTaskElements / max(per_iteration, 1)), TailStrategy::GuardWithIf).parallel(task);
}

// Rows (the innermost dim) in the widest vectors that fit, the last one shifted inwards: a
// masked tail loads lane by lane, and short rows (an image's width) would be all tail.
void vectorize_rows(Stage s, const Var& x, Expr row, int vec) {
  for (int w = vec; w >= 4; w /= 2) s.specialize(row >= w).vectorize(x, w, TailStrategy::ShiftInwards);
}

// A one-dimensional pointwise kernel's loop over vectors (schedule_pointwise).
Var vector_loop() { return Var("xv"); }

void schedule_pointwise(Func f, const std::vector<Var>& vars, int vec, Expr elements, Expr row, Expr outer_extent) {
  if (vars.size() >= 2) {
    vectorize_rows(f.specialize(elements < kSerialBelow), vars[0], row, vec);
    parallel_tasks(f, vars.back(), elements / outer_extent);
    vectorize_rows(f, vars[0], row, vec);
    return;
  }
  // Both branches loop over vectors in `vector_loop()`, where shared values are computed.
  Var lane("lane");
  f.specialize(elements < kSerialBelow)
      .split(vars[0], vector_loop(), lane, vec, TailStrategy::GuardWithIf)
      .vectorize(lane);
  // The kernel has at least kSerialBelow elements here, so shifting the last chunk and vector
  // inwards stays in bounds; a guarded tail costs masked loads in every vector.
  Var outer("xo"), inner("xi");
  f.split(vars[0], outer, inner, 1 << 14, TailStrategy::ShiftInwards)
      .parallel(outer)
      .split(inner, vector_loop(), lane, vec, TailStrategy::ShiftInwards)
      .vectorize(lane);
}

// Tiles of vec x vec outputs, one vector of x0 per row of the tile; tasks of whole rows of tiles.
// The tile's side is the native vector, also where the kernel's other loops take wider steps
// (element_lanes): its rows are unrolled, and a transposed exp + tanh of 1024x1024 took Halide
// 80 s to compile in 32x32 tiles (2.3 ms a run), 8.7 s in 16x16 (1.5-2.0 ms), 1.4 s in 8x8 on
// AVX2 (1.4-1.5 ms).
void schedule_transposing(Func f, const std::vector<Var>& vars, Expr elements, Expr row) {
  const int vec = native_lanes();
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  for (Stage s : {Stage(f.specialize(elements < kSerialBelow)), Stage(f)})
    s.tile(vars[0], vars[1], xo, yo, xi, yi, vec, vec, TailStrategy::GuardWithIf).vectorize(xi).unroll(yi);
  parallel_tasks(f, yo, row * vec);
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

// A value used in more than one place whose recomputation costs more than this (ir::op_cost summed
// over its expression, a shared operand once per use) is stored (per row in a row kernel, per
// vector in a pointwise one). Storing costs a pass over the row and a store per vector:
// LayerNorm's backward row kernel (a value of 5 operations, read by a sum and the output) ran 270
// us per step with it stored at 4, 208 us recomputed.
constexpr int kStoreAbove = 8;
constexpr int kCostCap = 1 << 20;  // any cost past kStoreAbove reads the same; two capped ones add up within int
// Stored values come in levels, each a Func that reads the ones before. A pointwise kernel
// computes its last kLevelsPerVector levels per vector, in registers (the benchmarks' deepest
// kernel has 4); earlier ones each in a loop of its own over the domain, in memory. Halide's
// compile time grows steeply with the number of Funcs nested in one loop: a recurrence with an
// output every step compiled 60 steps in 29 s with every level per vector, 4.4 s so.
constexpr size_t kLevelsPerVector = 4;

// Per-element values that several roots compute from (outputs, reductions):
// Halide computes each root's expression on its own, so a value shared by two is computed twice
// unless it is stored. Stored are those reached from two roots or more that cost more than
// kStoreAbove to compute again from what is read or stored. Stored values that do not read one
// another are computed in one loop (a Tuple), so that independent transcendental functions
// interleave rather than each being a loop-long chain of dependent operations: `depth` counts the
// stored values a value is computed from, in sequence.
struct SharedValues {
  std::vector<bool> store;
  std::vector<int> depth;

  SharedValues(const fusion::Kernel& k, const std::vector<int>& roots)
      : store(k.nodes.size(), false), depth(k.nodes.size(), 0) {
    std::vector<int> reached(k.nodes.size(), 0), cost(k.nodes.size(), 0);
    for (int root : roots) {
      std::vector<bool> seen(k.nodes.size(), false);
      std::vector<int> stack{root};
      while (!stack.empty()) {
        const int i = stack.back();
        stack.pop_back();
        for (int a : k.nodes[i].args)
          if (!fusion::is_read(a) && !k.nodes[a].per_row && !seen[a]) {
            seen[a] = true;
            ++reached[a];
            stack.push_back(a);
          }
      }
      if (!k.nodes[root].per_row) ++reached[root];
    }
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      const ir::Node& n = *k.nodes[i].node;
      if (k.nodes[i].per_row || n.op == Op::Const) continue;
      cost[i] = ir::op_cost(n.op);
      for (int a : k.nodes[i].args) {
        if (fusion::is_read(a)) continue;
        // Capped: counted once per use, a chain of values each read twice (a relu's compare and
        // select) doubles its cost at each step, and overflowed int after ~30 (UBSan's finding).
        if (!store[a]) cost[i] = std::min(cost[i] + cost[a], kCostCap);
        depth[i] = std::max(depth[i], depth[a] + (store[a] ? 1 : 0));
      }
      store[i] = reached[i] >= 2 && cost[i] > kStoreAbove;
    }
  }

  // Defines the stored values among `nodes` in Funcs over `vars`, one per depth, each reading only
  // earlier ones (through `stored`, which gains them; `context` evaluates them). Returns the
  // Funcs, to be scheduled.
  std::vector<Func> define_stored(Lowering& L, const std::vector<int>& nodes, const std::vector<Var>& vars,
                                  const std::function<Lowering::Context()>& context,
                                  std::map<int, Lowering::Stored>& stored) const {
    std::vector<Func> funcs;
    for (int d = 0;; ++d) {
      std::vector<int> group;
      bool deeper = false;
      for (int i : nodes) {
        if (!store[size_t(i)]) continue;
        if (depth[size_t(i)] == d) group.push_back(i);
        deeper |= depth[size_t(i)] > d;
      }
      if (!group.empty()) {
        Lowering::Context def = context();
        std::vector<Expr> values;
        for (int i : group) values.push_back(L.value(i, def));
        Func f("stored" + std::to_string(group[0]));
        define(f, vars, values);
        for (size_t g = 0; g < group.size(); ++g)
          stored.emplace(group[g], Lowering::Stored{f, group.size() == 1 ? -1 : int(g)});
        funcs.push_back(f);
      }
      if (!deeper) return funcs;
    }
  }
};

// The kernel's outputs in groups that share no computation. Independent computations merged into
// one kernel (an optimizer step over many parameters) each get their own loop, so that a loop
// streams a few arrays rather than hundreds: hardware prefetchers follow a few dozen streams, and
// one loop over an Adam step's 280 arrays ran at a third of the memory bandwidth. Constants,
// whose values are arguments, connect nothing. Groups are runs of consecutive outputs (the
// parameters' ops are traced one parameter after another); outputs whose groups interleave stay
// one group, one loop.
std::vector<std::vector<int>> independent_output_groups(const fusion::Kernel& k) {
  std::vector<int> parent(k.nodes.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = int(i);
  std::function<int(int)> find = [&](int i) { return parent[i] == i ? i : parent[i] = find(parent[i]); };
  for (size_t i = 0; i < k.nodes.size(); ++i)
    for (int a : k.nodes[i].args)
      if (!fusion::is_read(a) && k.nodes[a].node->op != Op::Const) parent[find(a)] = find(int(i));
  std::vector<std::vector<int>> groups;
  std::vector<int> roots;
  for (int o : k.outputs) {
    const int root = find(o);
    if (roots.empty() || roots.back() != root) {
      if (std::find(roots.begin(), roots.end(), root) != roots.end()) return {k.outputs};
      roots.push_back(root);
      groups.emplace_back();
    }
    groups.back().push_back(o);
  }
  return groups;
}

Pipeline build_pointwise(Lowering& L, std::vector<Argument>& args) {
  const fusion::Kernel& k = L.k;
  auto vars = make_vars(k.domain.size());
  std::vector<Expr> coords(k.domain.size());
  for (size_t d = 0; d < coords.size(); ++d) coords[d] = vars[coords.size() - 1 - d];
  std::vector<Var> lhs(vars.begin(), vars.end());
  const auto groups = independent_output_groups(k);
  // Values that two outputs share (GELU's erf, for its value and its gradient) are computed once
  // per vector, into registers, in the loop that writes the outputs.
  std::map<int, Lowering::Stored> stored;
  std::vector<Func> stored_funcs;
  if (groups.size() == 1 && !k.tiny_inner()) {
    std::vector<int> nodes(k.nodes.size());
    std::iota(nodes.begin(), nodes.end(), 0);
    stored_funcs = SharedValues(k, groups[0])
                       .define_stored(
                           L, nodes, lhs,
                           [&] {
                             return Lowering::Context{coords, {}, {}, nullptr, &stored};
                           },
                           stored);
  }
  Lowering::Context ctx{coords, {}, {}, nullptr, &stored};
  std::vector<Func> funcs;  // one loop per group
  for (const auto& group : groups) {
    std::vector<Expr> outs;
    for (int o : group) outs.push_back(to_storage(L.value(o, ctx), k.nodes[o].node->dtype));
    Func f("out");
    define(f, lhs, outs);
    funcs.push_back(f);
  }
  const int vec = element_lanes(k);
  if (funcs.size() > 1 && vars.size() == 1) {
    // Groups over one flat domain share one parallel loop over chunks (one dispatch to the thread
    // pool, not one per group); within a chunk each group's loop runs in turn. compute_with does
    // not mix with specializations, so tails are guarded rather than shifted inwards. The domain
    // is cut into vectors first, and the vectors into chunks: the chunk's guard is then a test of
    // the loop's index, which skips the vectors past the end. (Cut in the other order, the guard
    // was part of the vectors' predicate, and every vector of a chunk ran as masked loads and
    // stores: an Adam step's six 512-element parameters, in one 16K-element chunk, took 160 us
    // against 7.) The chunk is a constant: one computed from the extents doubled the time Halide
    // took to compile an Adam step's kernel.
    Var outer("xo"), inner("xi"), vectors("xvecs"), lane("lane");  // not vector_loop(): no stored values here
    for (size_t g = 0; g < funcs.size(); ++g) {
      funcs[g]
          .split(vars[0], vectors, lane, vec, TailStrategy::GuardWithIf)
          .split(vectors, outer, inner, (1 << 14) / vec, TailStrategy::GuardWithIf)
          .parallel(outer)
          .vectorize(lane);
      if (g > 0) funcs[g].compute_with(funcs[g - 1], outer);
    }
  } else {
    // A read that walks the outer dim contiguously and the inner one across rows (a transposed
    // view): the output in tiles, whose gathered loads hit the same cache lines row after row.
    bool transposing = vars.size() == 2 && stored_funcs.empty();
    if (transposing)
      transposing = std::any_of(k.reads.begin(), k.reads.end(), [](const fusion::Read& r) {
        return stride_class(r.strides[1]) == 's' && stride_class(r.strides[0]) == '1';
      });
    for (Func& f : funcs) {
      if (const int64_t e = k.tiny_inner())
        schedule_tiny_inner(f, vars, int(e), L.extents[k.domain.size() - 2], product(L.extents) / L.extents[0]);
      else if (transposing)
        schedule_transposing(f, vars, product(L.extents), L.extents[1]);
      else
        schedule_pointwise(f, vars, vec, product(L.extents), L.extents[k.domain.size() - 1], L.extents[0]);
    }
  }
  for (size_t level = 0; level < stored_funcs.size(); ++level) {
    Func& f = stored_funcs[level];
    if (level + kLevelsPerVector >= stored_funcs.size()) {
      // A rank-2 or more kernel loops over vectors in x0 (vectorize_rows).
      f.compute_at(funcs[0], vars.size() == 1 ? vector_loop() : vars[0]);
    } else {
      f.compute_root();
      parallel_tasks(f, vars.back(), product(L.extents) / L.extents[0]);
    }
    f.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  }
  args = L.arguments;
  return Pipeline(funcs);
}

// Value `j` of f at `at`: f's value itself when it holds one (not a Tuple).
Expr tuple_element(const Func& f, const std::vector<Expr>& at, size_t j) {
  return f.outputs() == 1 ? Expr(f(at)) : Expr(f(at)[int(j)]);
}

// Whether every one of `reduces` is a floating-point sum.
bool floating_sums(const fusion::Kernel& k, const std::vector<int>& reduces) {
  return std::all_of(reduces.begin(), reduces.end(), [&](int j) {
    return k.nodes[size_t(j)].node->op == Op::Sum && value_type(k.nodes[size_t(j)].node->dtype).is_float();
  });
}

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
  static constexpr int kChunkSteps = 1024;
  static constexpr int kBlockSteps = 64;
  static constexpr int kColumnBlock = 64;
  Func acc, partial;
  Func block_sums;     // in lanes, float sums: partial's blocks of kBlockSteps steps (defined if so)
  RDom blocks;         // partial's update over block_sums
  RDom rows;           // the reduced dims, when not in lanes
  RDom column_blocks;  // columns: acc's update over partial's blocks of rows (defined if so)
  Var block{"b"};      // columns: partial's block of rows
  bool lanes = false;
  bool chunked = false;  // a whole domain in chunks: partial([u,] chunk)
  Var chunk{"chunk"};
  RDom vectors;  // in lanes: the steps of stepping(), `width` elements of the innermost dim per step
  // In lanes, two vectors a step: two chains of dependent additions (or maxima) run side by side,
  // where one waited on each step's latency.
  int width = 0;
  std::vector<int> reduces;
  std::vector<ScalarType> dtypes;  // of `reduces`: what at() gives

  // The value of reduction `j` (the j-th of `reduces`) at the kept coordinates.
  Expr at(size_t j, const std::vector<Expr>& kept) const {
    return cast(value_type(dtypes[j]), tuple_element(acc, kept, j));
  }
  // The stage whose innermost loop steps along the rows in lanes (prefetches go there).
  Stage stepping() { return block_sums.defined() ? block_sums.update() : partial.update(); }

  // `element_context(coords)` gives the context in which the reduced values are evaluated at the
  // domain coordinates `coords`; `phase` names the Funcs (acc1, partial1, ...).
  // `chunk_rows`: a whole-domain reduction of more than one flat run (build_reduction) sums chunks of
  // rows in parallel too.
  Accumulator(Lowering& L, std::vector<int> reducing, const std::vector<Var>& vars,
              const std::function<Lowering::Context(std::vector<Expr>)>& element_context, int phase = 1,
              bool chunk_rows = false)
      : acc("acc" + std::to_string(phase)), partial("partial" + std::to_string(phase)), reduces(std::move(reducing)) {
    const fusion::Kernel& k = L.k;
    const size_t rank = k.domain.size(), n = reduces.size();
    const int vec = native_lanes();
    std::vector<size_t> kept_dims, reduced_dims;
    for (size_t d = 0; d < rank; ++d) (k.reduced[d] ? reduced_dims : kept_dims).push_back(d);
    const size_t outer_dim = reduced_dims.empty() ? 0 : reduced_dims.front();  // the outermost reduced
    bool numeric = true;
    for (int j : reduces) numeric &= !value_type(k.nodes[j].node->dtype).is_bool();
    lanes = k.reduced.back() && numeric && !k.narrow_rows();
    width = 2 * vec;
    const Expr inner_extent = L.extents[rank - 1];
    const Expr whole = inner_extent / width * width;  // elements of a row in whole steps
    Var u("u");
    std::vector<Expr> lhs(vars.begin(), vars.end());

    // The reduced dims as an RDom, innermost first; in lanes, `inner` is the innermost one's range;
    // `outer`, if given, the outermost reduced dim's (a chunk of rows, a block of columns' rows).
    auto reduced_domain = [&](Range inner, Range outer = Range()) {
      Region region;
      for (auto it = reduced_dims.rbegin(); it != reduced_dims.rend(); ++it)
        region.push_back(lanes && *it == rank - 1          ? inner
                         : *it == outer_dim && outer.min.defined() ? outer
                         : k.window_extent(*it)            ? Range(0, int(k.window_extent(*it)))
                                                           : Range(0, L.extents[*it]));
      return RDom(region);
    };
    // The values the reducing nodes take at r (the innermost reduced coordinate given by `inner`;
    // the outermost reduced dim's offset by `first_row`).
    auto values_at = [&](const RDom& r, Expr inner, Expr first_row = Expr()) {
      std::vector<Expr> coords(rank);
      for (size_t i = 0; i < kept_dims.size(); ++i) coords[kept_dims[i]] = vars[kept_dims.size() - 1 - i];
      for (size_t i = 0; i < reduced_dims.size(); ++i) coords[reduced_dims[i]] = r[int(reduced_dims.size() - 1 - i)];
      if (first_row.defined()) coords[outer_dim] = coords[outer_dim] + first_row;
      if (lanes) coords[rank - 1] = inner;
      Lowering::Context prologue = element_context(coords);
      std::vector<Expr> xs;
      for (int j : reduces) {
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
    };
    // Initial values in the input's precision (`inits`) and in what adds blocks (`wide_inits`:
    // float64 for float sums).
    std::vector<Expr> inits, wide_inits;
    const bool sums_in_blocks = floating_sums(k, reduces) && !k.narrow_rows();  // windows are short
    for (int j : reduces) {
      dtypes.push_back(k.nodes[j].node->dtype);
      inits.push_back(reduction_initial(*k.nodes[j].node));
      wide_inits.push_back(sums_in_blocks ? cast(Float(64), inits.back()) : inits.back());
    }
    // f(at) updated by x, each value converted to f's type.
    auto define_update = [&](Func& f, const std::vector<Expr>& at, const std::vector<Expr>& x) {
      std::vector<Expr> ups;
      for (size_t j = 0; j < n; ++j) {
        const Expr current = tuple_element(f, at, j);
        ups.push_back(reduction_update(*k.nodes[reduces[j]].node, current, cast(current.type(), x[j])));
      }
      if (n == 1)
        f(at) = ups[0];
      else
        f(at) = Tuple(ups);
    };
    define(acc, vars, wide_inits);
    // In lanes: partial(p_lhs) over the innermost steps [first, first + count) (count at most
    // `bound`), each lane's steps in blocks when the reductions are float sums.
    auto define_lanes = [&](const std::vector<Var>& p_lhs, Expr first, Expr count, Expr bound) {
      std::vector<Expr> p_at(p_lhs.begin(), p_lhs.end());
      if (!sums_in_blocks) {
        RDom r = reduced_domain(Range(0, bound));
        if (!Internal::can_prove(bound <= count)) r.where(r[0] < count);
        define(partial, p_lhs, inits);
        define_update(partial, p_at, values_at(r, (first + r[0]) * width + u));
        return r;
      }
      Var b("blk");
      std::vector<Var> b_lhs(p_lhs);
      b_lhs.push_back(b);
      RDom r = reduced_domain(Range(0, kBlockSteps));
      r.where(b * kBlockSteps + r[0] < count);
      block_sums = Func("block_sums" + std::to_string(phase));
      define(block_sums, b_lhs, inits);
      define_update(block_sums, std::vector<Expr>(b_lhs.begin(), b_lhs.end()),
                    values_at(r, (first + b * kBlockSteps + r[0]) * width + u));
      blocks = RDom(0, (bound + kBlockSteps - 1) / kBlockSteps);
      std::vector<Expr> block_at(p_at);
      block_at.push_back(blocks.x);
      std::vector<Expr> sums;
      for (size_t j = 0; j < n; ++j) sums.push_back(tuple_element(block_sums, block_at, j));
      define(partial, p_lhs, wide_inits);
      define_update(partial, p_at, sums);
      return r;
    };
    // acc takes the partials read at `from` (over an RDom), then, in lanes, each row's last
    // (extent % width) elements; `r` is partial's update domain.
    auto combine_partials = [&](const std::vector<Expr>& from, const RDom& r) {
      std::vector<Expr> partials;
      for (size_t j = 0; j < n; ++j) partials.push_back(tuple_element(partial, from, j));
      define_update(acc, lhs, partials);
      if (lanes) {
        RDom tail = reduced_domain(Range(whole, inner_extent - whole));
        define_update(acc, lhs, values_at(tail, tail[0]));
        // Two native vectors a step, not one of twice the width: on AVX2 a 16-lane compare (a
        // row's max) went through byte packing (the softmax cross-entropy row kernel 1447 ->
        // 1332 us). The two vectors inside the step's loop: outside, each half of the row was a
        // loop of its own.
        Var uo("uo"), ui("ui");
        auto two_vectors = [&](Stage s) -> Stage { return s.split(u, uo, ui, width / 2).vectorize(ui).unroll(uo); };
        two_vectors(partial);
        if (block_sums.defined()) {
          two_vectors(partial.update()).reorder(ui, uo, blocks.x);
          block_sums.compute_at(partial, blocks.x);
          two_vectors(block_sums);
          two_vectors(block_sums.update()).reorder(ui, uo, r[0]);
        } else {
          two_vectors(partial.update()).reorder(ui, uo, r[0]);
        }
      }
      vectors = r;
    };
    if (chunk_rows && vars.empty() && !(lanes && rank == 1)) {
      // A whole domain that is not one flat run of vectors: chunks of rows of dim 0, partial(u, c)
      // in lanes or partial(c), so that chunks run in parallel and each accumulator sums a bounded
      // run (about kChunkSteps values per lane or scalar); then the chunks are combined.
      chunked = true;
      Expr row_elements = 1;
      for (size_t d = 1; d < rank; ++d) row_elements = row_elements * L.extents[d];
      const Expr rows_per_chunk = max(1, kChunkSteps * (lanes ? width : 1) / max(row_elements, 1));
      const Expr chunks = (L.extents[0] + rows_per_chunk - 1) / rows_per_chunk;
      RDom r = reduced_domain(Range(0, inner_extent / width), Range(0, rows_per_chunk));
      r.where(chunk * rows_per_chunk + r[int(rank) - 1] < L.extents[0]);
      std::vector<Var> p_lhs;
      if (lanes) p_lhs.push_back(u);
      p_lhs.push_back(chunk);
      define(partial, p_lhs, wide_inits);  // rare (a strided view's sum): float64 throughout
      define_update(partial, std::vector<Expr>(p_lhs.begin(), p_lhs.end()),
                    values_at(r, lanes ? r[0] * width + u : Expr(), chunk * rows_per_chunk));
      RDom combined = lanes ? RDom(0, width, 0, chunks) : RDom(0, chunks);
      std::vector<Expr> from{combined.x};
      if (lanes) from.push_back(combined.y);
      combine_partials(from, r);
    } else if (lanes) {
      // A whole flat domain (chunked) splits its steps into chunks c of kChunkSteps:
      // partial(u, c), so that the chunks run in parallel; then every chunk's lanes are combined.
      chunked = rank == 1;
      std::vector<Var> p_lhs{u};
      RDom r, combined;
      std::vector<Expr> from;
      const Expr whole_steps = inner_extent / width;
      if (chunked) {
        p_lhs.push_back(chunk);
        const Expr first_step = chunk * kChunkSteps;
        r = define_lanes(p_lhs, first_step, whole_steps - first_step, kChunkSteps);
        combined = RDom(0, width, 0, (whole_steps + kChunkSteps - 1) / kChunkSteps);
        from = {combined.x, combined.y};
      } else {
        p_lhs.insert(p_lhs.end(), vars.begin(), vars.end());
        r = define_lanes(p_lhs, 0, whole_steps, whole_steps);
        combined = RDom(0, width);
        from = {combined.x};
        from.insert(from.end(), vars.begin(), vars.end());
      }
      combine_partials(from, r);
    } else if (!k.reduced.back() && floating_sums(k, reduces)) {
      // Columns (the innermost dim kept): partial(..., b) adds the rows of block b (kColumnBlock
      // of the outermost reduced dim: dim 0 for a bias's gradient, a middle dim for sum(1) of a
      // 3-D tensor), then acc adds the blocks. A float32 column added row after row drifts with
      // its length (5000 rows of randn were 2.7e-4 off). Sums only: a product in blocks can meet
      // 0 * inf (a zero in one block, an overflow in another) where row after row gives 0.
      const Var& b = block;
      const Expr outer_extent = L.extents[outer_dim];
      rows = reduced_domain(Range(), Range(0, kColumnBlock));
      rows.where(b * kColumnBlock + rows[rows.dimensions() - 1] < outer_extent);
      std::vector<Var> p_lhs(vars.begin(), vars.end());
      p_lhs.push_back(b);
      define(partial, p_lhs, inits);
      define_update(partial, std::vector<Expr>(p_lhs.begin(), p_lhs.end()), values_at(rows, Expr(), b * kColumnBlock));
      column_blocks = RDom(0, (outer_extent + kColumnBlock - 1) / kColumnBlock);
      std::vector<Expr> from(vars.begin(), vars.end());
      from.push_back(column_blocks.x);
      combine_partials(from, rows);
    } else {
      rows = reduced_domain(Range(0, inner_extent));
      define_update(acc, lhs, values_at(rows, Expr()));
    }
  }
};

// The coordinates of a row kernel's per-row values: reduced dims at 0.
std::vector<Expr> row_coords(const fusion::Kernel& k, const std::vector<Var>& kept_vars) {
  std::vector<Expr> coords(k.domain.size(), Expr(0));
  size_t v = kept_vars.size();
  for (size_t d = 0; d < k.domain.size(); ++d)
    if (!k.reduced[d]) coords[d] = kept_vars[--v];
  return coords;
}

Pipeline build_reduction(Lowering& L, std::vector<Argument>& args) {
  const fusion::Kernel& k = L.k;
  const int vec = native_lanes();
  size_t kept_count = 0;
  for (bool r : k.reduced) kept_count += !r;
  auto vars = make_vars(kept_count);
  std::vector<Var> lhs(vars.begin(), vars.end());
  std::vector<Expr> lhs_e(vars.begin(), vars.end());
  Accumulator A(
      L, k.reduces, vars,
      [](std::vector<Expr> coords) {
        return Lowering::Context{coords, {}, {}};
      },
      1, true);

  // The epilogue: outputs at the output coordinates, where reduced dims are 0.
  Lowering::Context epilogue{row_coords(k, vars), {}, {}};
  for (size_t j = 0; j < k.reduces.size(); ++j) epilogue.reduced[k.reduces[j]] = A.at(j, lhs_e);
  std::vector<Expr> outs;
  for (int o : k.outputs) outs.push_back(to_storage(L.value(o, epilogue), k.nodes[o].node->dtype));
  Func out("out");
  define(out, lhs, outs);

  // Schedule: parallel over the outermost kept dim; rows in lanes (above), or else the innermost
  // kept dim in vectors when it is not reduced. (Vectorizing a kept dim outside a reduced one
  // means gathers, as its stride is an argument: measured slower than scalar loops on pooling.)
  // A reduction to one value computes its lanes once, at the root (inlined, each lane was a
  // strided scalar pass of its own: 25x slower), its chunks in parallel when it has several.
  if (A.lanes && !vars.empty()) A.partial.compute_at(out, vars.back());
  if ((A.lanes || A.chunked) && vars.empty()) A.partial.compute_root();
  if (A.chunked) A.partial.update().specialize(product(L.extents) >= kSerialBelow).parallel(A.chunk);
  // Narrow rows (pooling windows) vectorize the innermost kept dim too, where every read steps
  // through it by a compiled-in stride (no gathers).
  // Floating-point ones only: bool reductions crashed with SIGILL under this schedule.
  std::vector<size_t> kept_dims;
  for (size_t d = 0; d < k.domain.size(); ++d)
    if (!k.reduced[d]) kept_dims.push_back(d);
  bool vector_narrow_rows = k.narrow_rows() && !kept_dims.empty();
  for (int j : k.reduces) vector_narrow_rows &= is_floating(k.nodes[j].node->dtype);
  if (vector_narrow_rows)
    for (const auto& read : k.reads) vector_narrow_rows &= stride_class(read.strides[kept_dims.back()]) != 's';
  Func& acc = A.acc;
  if (vector_narrow_rows) {
    // One vector of outputs at a time, its accumulators on the stack; tasks of outer rows up to
    // kTaskElements (of 16 rows, a 2x2 pooling of 14-wide rows made 1792 tasks of 896 elements
    // and spent more in the pool's locks than in the windows). Rows are short (a pooled width),
    // so vectors are 8 or 4 wide and the last one shifts inwards: a masked tail would load lane
    // by lane in every row.
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
  } else if (!vars.empty()) {
    Expr combine_per_iteration;  // the blocks of rows summed at the root: what out's loop adds
    acc.compute_at(out, vars.back());
    if (!k.reduced.back()) {
      acc.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
      // Column sums: eight vectors of columns at a time, in rows, so that each row is read in runs
      // of 8 vectors rather than one (one vector at a time ran at ~20 GB/s, striding down the
      // rows).
      std::vector<VarOrRVar> order{vars[0]};
      for (int d = 0; d < A.rows.dimensions(); ++d) order.emplace_back(A.rows[d]);
      if (A.column_blocks.defined() && vars.size() == 1) {
        // Columns of a 2-D domain: blocks of rows in parallel, each read row after row in runs of
        // up to kColumnRun columns, then acc adds the blocks in order (strips of columns read
        // down every row stepped a page per row: ~40 GB/s on LayerNorm's weight gradients). A
        // task takes consecutive blocks up to 8 kTaskElements (a task per block spent 1M x 2
        // columns in the pool's locks), but at most a quarter of them, so that a few blocks still
        // make three or four tasks (the MLP's LayerNorm gradients, 256 x 512 with GELU's
        // derivative per element: 112 us as one task, 87-93 as four).
        constexpr int kColumnRun = 2048;
        Var xo("xo"), xi("xi"), bo("bo"), bi("bi"), tile("tile");
        const Expr run = min(L.extents[k.domain.size() - 1], kColumnRun);  // a guarded run wastes its tail
        const Expr block_count = A.column_blocks.x.extent();
        const Expr blocks_per_task =
            max(1, min(8 * kTaskElements / (Accumulator::kColumnBlock * run), (block_count + 3) / 4));
        A.partial.compute_root().vectorize(vars[0], vec, TailStrategy::GuardWithIf);
        Stage blocks = A.partial.update();
        blocks.split(vars[0], xo, xi, run, TailStrategy::GuardWithIf)
            .split(A.block, bo, bi, blocks_per_task, TailStrategy::GuardWithIf);
        std::vector<VarOrRVar> loops{xi};
        for (int d = 0; d < A.rows.dimensions(); ++d) loops.emplace_back(A.rows[d]);
        for (const Var& v : {bi, xo, bo}) loops.emplace_back(v);
        blocks.reorder(loops).fuse(xo, bo, tile).vectorize(xi, vec, TailStrategy::GuardWithIf);
        blocks.specialize(product(L.extents) >= kSerialBelow).parallel(tile);
        acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(vars[0], A.column_blocks.x);
        combine_per_iteration = block_count * vec * 8;
      } else if (A.column_blocks.defined()) {  // each block of rows at acc's loop over blocks
        acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(vars[0], A.column_blocks.x);
        A.partial.compute_at(acc, A.column_blocks.x)
            .store_at(out, vars.back())  // one buffer for all blocks, on the stack
            .store_in(MemoryType::Stack)
            .vectorize(vars[0], vec, TailStrategy::GuardWithIf);
        A.partial.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(order);
      } else {
        acc.update().vectorize(vars[0], vec, TailStrategy::GuardWithIf).reorder(order);
      }
      Var block("block");
      out.split(vars[0], vars[0], block, vec * 8, TailStrategy::GuardWithIf)
          .vectorize(block, vec, TailStrategy::GuardWithIf);
    }
    // An iteration of the outermost kept loop reduces its rows; when that loop is the columns'
    // (split into blocks above), a block's.
    Expr per_iteration = product(L.extents) / L.extents[kept_dims.front()];
    if (vars.size() == 1 && !k.reduced.back()) per_iteration *= vec * 8;
    if (combine_per_iteration.defined()) per_iteration = combine_per_iteration;
    parallel_tasks(out.specialize(product(L.extents) >= kSerialBelow), vars.back(), per_iteration);
  }
  args = L.arguments;
  return Pipeline(out);
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

// A row kernel (Kernel::row_kernel): one loop over rows; per row, each phase's accumulators in
// turn, then the row's per-element and per-row outputs, while the row is in cache. Values used in
// more than one place (a prologue and an output, or two outputs: Halide computes each output's
// expression on its own) are stored per row and computed once, unless they are cheap.
Pipeline build_rows(Lowering& L, std::vector<Argument>& args) {
  const fusion::Kernel& k = L.k;
  const size_t rank = k.domain.size();
  const int vec = element_lanes(k);
  size_t reduced_count = 0;
  while (reduced_count < rank && k.reduced[rank - 1 - reduced_count]) ++reduced_count;
  for (size_t d = 0; d + reduced_count < rank; ++d)
    KILN_CHECK(!k.reduced[d], "halide: a row kernel reduces trailing dims only (", k.key(), ")");
  const std::vector<Var> vars = make_vars(rank);
  const std::vector<Var> kept(vars.begin() + long(reduced_count), vars.end());  // innermost first
  std::vector<Expr> coords(rank);
  for (size_t d = 0; d < rank; ++d) coords[d] = vars[rank - 1 - d];

  Lowering::Context rows{row_coords(k, kept), {}, {}};
  L.row_vars = kept;
  std::map<int, Lowering::Stored> stored;
  std::vector<Func> stored_funcs;
  auto element_context = [&](std::vector<Expr> at) { return Lowering::Context{std::move(at), {}, {}, &rows, &stored}; };

  std::vector<int> roots = k.reduces;  // what stored values are shared by
  for (int o : k.outputs)
    if (!k.nodes[o].per_row) roots.push_back(o);
  const SharedValues shared(k, roots);
  const std::vector<int> phase = k.phases();
  const int phases = k.reduces.empty() ? 0 : *std::max_element(phase.begin(), phase.end());
  std::vector<Accumulator> accumulators;
  accumulators.reserve(size_t(phases));
  for (int p = 1; p <= phases + 1; ++p) {
    // The values stored per row that need only earlier phases, then this phase's reductions.
    std::vector<int> ready;
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (phase[i] == p - 1) ready.push_back(int(i));
    auto funcs = shared.define_stored(
        L, ready, vars, [&] { return element_context(coords); }, stored);
    stored_funcs.insert(stored_funcs.end(), funcs.begin(), funcs.end());
    if (p > phases) break;
    std::vector<int> reducing;
    for (int j : k.reduces)
      if (phase[j] == p) reducing.push_back(j);
    accumulators.emplace_back(L, reducing, kept, element_context, p);
    // A row is read from memory in the first phase; the phases after it compute from cache and
    // leave memory idle. So the first phase fetches the next row too, a vector ahead per vector
    // (one row ahead when rows are contiguous), and the next row's first phase finds it in cache.
    if (Accumulator& A = accumulators.back(); p == 1 && A.lanes)
      for (int r : streamed_reads(k, reducing, shared.store))
        A.stepping().prefetch(L.inputs[size_t(r)], A.vectors[0], A.vectors[0], L.extents[rank - 1] / A.width,
                              PrefetchBoundStrategy::NonFaulting);
    std::vector<Expr> at(kept.begin(), kept.end());
    for (size_t j = 0; j < reducing.size(); ++j) rows.reduced[reducing[j]] = accumulators.back().at(j, at);
  }

  std::vector<Expr> per_element, per_row;
  Lowering::Context elements = element_context(coords);
  for (int o : k.outputs) {
    Expr e = to_storage(L.value(o, k.nodes[o].per_row ? rows : elements), k.nodes[o].node->dtype);
    (k.nodes[o].per_row ? per_row : per_element).push_back(e);
  }
  Func out_elements("out"), out_rows("out_rows");
  if (!per_element.empty()) define(out_elements, vars, per_element);
  if (!per_row.empty()) define(out_rows, kept, per_row);

  // Schedule: rows in parallel; in each, the accumulators and stored values, then the outputs.
  // Per-row outputs are written in the same loop (compute_with), not in a loop of their own that
  // would reduce every row again.
  Func main = per_element.empty() ? out_rows : out_elements;
  const bool two_outputs = !per_element.empty() && !per_row.empty();
  auto once_per_row = [&](Func f) {  // one row only (its kept dims coalesced away): at the root
    if (kept.empty()) {
      f.compute_root();
      return;
    }
    f.compute_at(main, kept.front());
    // Each turn of the loop the two outputs share (compute_with, below) is the same row of both,
    // but Halide sizes what it computes there for the span between the two outputs' rows: buffers
    // sized at run time (a malloc and a free per row) and sums kept in memory, not registers.
    if (two_outputs)
      for (const Var& v : kept) f.bound_extent(v, 1);
  };
  if (!per_element.empty()) out_elements.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
  for (Func& f : stored_funcs) {
    once_per_row(f);
    f.vectorize(vars[0], vec, TailStrategy::GuardWithIf);
    // Asked for the stack, where a row fits Halide's stack budget (rows over 16 KiB still go to
    // the heap): on the heap it was a malloc and a free per row.
    f.store_in(MemoryType::Stack);
  }
  for (auto& [i, f] : L.row_values) once_per_row(f);
  for (auto& A : accumulators) {
    once_per_row(A.acc);
    if (A.lanes) once_per_row(A.partial);
  }
  std::vector<Func> outputs;
  if (!per_element.empty()) outputs.push_back(out_elements);
  if (!per_row.empty()) outputs.push_back(out_rows);
  if (!kept.empty()) {
    for (Func& f : outputs) parallel_tasks(f, kept.back(), product(L.extents) / L.extents[0]);
    if (outputs.size() == 2) {
      out_rows.compute_with(out_elements, kept.front());
      for (Func& f : outputs)  // a Tuple's other buffers follow its first
        for (int d = 0; d < f.dimensions(); ++d) f.output_buffers()[0].dim(d).set_min(0);
      for (size_t j = 0; j < kept.size(); ++j)
        out_rows.output_buffers()[0].dim(int(j)).set_extent(
            out_elements.output_buffers()[0].dim(int(j + reduced_count)).extent());
    }
  }
  args = L.arguments;
  return Pipeline(outputs);
}

// Outputs are contiguous buffers at min 0 (backend.cpp): their strides follow from their extents,
// and a tiny inner dim's extent is compiled in. Known strides let Halide store a vector that
// steps over a tiny dim as dense interleaved stores: with the stride an argument, each was a
// scatter (a pooling gradient's 2x2 windows, stored 8 lanes at a time at stride 2). Only a
// Tuple's first buffer takes constraints; the others follow its mins and extents.
void constrain_output(const fusion::Kernel& k, Func f) {
  OutputImageParam out = f.output_buffers()[0];
  for (int d = 0; d < f.dimensions(); ++d) {
    out.dim(d).set_min(0);
    if (d > 0) out.dim(d).set_stride(out.dim(d - 1).stride() * out.dim(d - 1).extent());
  }
  if (const int64_t e = k.tiny_inner()) out.dim(0).set_extent(int(e));
}

// A stride constraint above reads its own buffer's extents and strides: the buffer's parameter
// holds the expression and the expression holds the parameter, a cycle of Halide's reference
// counts that outlived the pipeline (a few KB a kernel, LeakSanitizer's finding). Cleared when
// the compile is over, whichever way it ends.
struct ClearStrideConstraints {
  const Pipeline& pipeline;
  ~ClearStrideConstraints() {
    for (Func f : pipeline.outputs())
      for (OutputImageParam out : f.output_buffers())
        for (int d = 1; d < f.dimensions(); ++d) out.dim(d).set_stride(Expr());
  }
};

}  // namespace

std::string target_name() { return kernel_target().without_feature(Target::NoRuntime).to_string(); }

void compile_kernel(const fusion::Kernel& kernel, const std::string& name, const std::string& object_path,
                    const std::string& dump_dir) {
  try {
    Lowering L(kernel);
    std::vector<Argument> args;
    Pipeline p = kernel.row_kernel()                              ? build_rows(L, args)
                 : kernel.kind == fusion::Kernel::Kind::Reduction ? build_reduction(L, args)
                                                                  : build_pointwise(L, args);
    const ClearStrideConstraints clear{p};
    for (Func f : p.outputs()) constrain_output(kernel, f);
    // The statement first: it is what to read when compiling fails or hangs.
    if (!dump_dir.empty()) p.compile_to_lowered_stmt(dump_dir + "/" + name + ".stmt", args, Text, kernel_target());
    p.compile_to_object(object_path, args, name, kernel_target());
  } catch (const Halide::Error& e) {
    throw Error(detail::concat("halide: compiling kernel ", name, " failed: ", e.what()));
  }
}

void compile_runtime(const std::string& object_path) {
  compile_standalone_runtime(object_path, kernel_target().without_feature(Target::NoRuntime));
}

}  // namespace kiln::codegen::halide
