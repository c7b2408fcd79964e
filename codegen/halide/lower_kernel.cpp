#include "codegen/halide/lower_kernel.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "codegen/halide/ops.h"
#include "runtime/error.h"

namespace kiln::codegen::halide {
namespace {

using namespace Halide;
using ir::Op;

// A value used in more than one place whose recomputation costs more than this (ir::op_cost summed
// over its expression, a shared operand once per use) is stored (per row in a row kernel, per
// vector in a pointwise one). Storing costs a pass over the row and a store per vector:
// LayerNorm's backward row kernel (a value of 5 operations, read by a sum and the output) ran 270
// us per step with it stored at 4, 208 us recomputed.
constexpr int kStoreAbove = 8;
constexpr int kCostCap = 1 << 20;  // any cost past kStoreAbove reads the same; two capped ones add up within int

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

// The coordinates of a row kernel's per-row values: reduced dims at 0.
std::vector<Expr> row_coords(const fusion::Kernel& k, const std::vector<Var>& kept_vars) {
  std::vector<Expr> coords(k.domain.size(), Expr(0));
  size_t v = kept_vars.size();
  for (size_t d = 0; d < k.domain.size(); ++d)
    if (!k.reduced[d]) coords[d] = kept_vars[--v];
  return coords;
}

}  // namespace

PointwiseFuncs lower_pointwise(Lowering& L) {
  const fusion::Kernel& k = L.k;
  PointwiseFuncs f;
  f.vars = make_vars(k.domain.size());
  const std::vector<Var>& vars = f.vars;
  std::vector<Expr> coords(k.domain.size());
  for (size_t d = 0; d < coords.size(); ++d) coords[d] = vars[coords.size() - 1 - d];
  const auto groups = independent_output_groups(k);
  // Values that two outputs share (GELU's erf, for its value and its gradient) are computed once
  // per vector, into registers, in the loop that writes the outputs.
  std::map<int, Lowering::Stored> stored;
  if (groups.size() == 1 && !k.tiny_inner()) {
    std::vector<int> nodes(k.nodes.size());
    std::iota(nodes.begin(), nodes.end(), 0);
    f.stored = SharedValues(k, groups[0])
                   .define_stored(
                       L, nodes, vars,
                       [&] {
                         return Lowering::Context{coords, {}, {}, nullptr, &stored};
                       },
                       stored);
  }
  Lowering::Context ctx{coords, {}, {}, nullptr, &stored};
  for (const auto& group : groups) {  // one loop per group
    std::vector<Expr> outs;
    for (int o : group) outs.push_back(to_storage(L.value(o, ctx), k.nodes[o].node->dtype));
    Func out("out");
    define(out, vars, outs);
    f.outputs.push_back(out);
  }
  return f;
}

ReductionFuncs lower_reduction(Lowering& L) {
  const fusion::Kernel& k = L.k;
  size_t kept_count = 0;
  for (bool r : k.reduced) kept_count += !r;
  auto vars = make_vars(kept_count);
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
  define(out, vars, outs);
  return ReductionFuncs{vars, std::move(A), out};
}

std::vector<Func> RowFuncs::outputs() const {
  std::vector<Func> funcs;
  if (per_element) funcs.push_back(out_elements);
  if (per_row) funcs.push_back(out_rows);
  return funcs;
}

RowFuncs lower_rows(Lowering& L) {
  const fusion::Kernel& k = L.k;
  const size_t rank = k.domain.size();
  RowFuncs f;
  while (f.reduced_count < rank && k.reduced[rank - 1 - f.reduced_count]) ++f.reduced_count;
  for (size_t d = 0; d + f.reduced_count < rank; ++d)
    KILN_CHECK(!k.reduced[d], "halide: a row kernel reduces trailing dims only (", k.key(), ")");
  f.vars = make_vars(rank);
  f.kept.assign(f.vars.begin() + long(f.reduced_count), f.vars.end());  // innermost first
  std::vector<Expr> coords(rank);
  for (size_t d = 0; d < rank; ++d) coords[d] = f.vars[rank - 1 - d];

  Lowering::Context rows{row_coords(k, f.kept), {}, {}};
  L.row_vars = f.kept;
  std::map<int, Lowering::Stored> stored;
  auto element_context = [&](std::vector<Expr> at) { return Lowering::Context{std::move(at), {}, {}, &rows, &stored}; };

  std::vector<int> roots = k.reduces;  // what stored values are shared by
  for (int o : k.outputs)
    if (!k.nodes[o].per_row) roots.push_back(o);
  const SharedValues shared(k, roots);
  f.stored_nodes = shared.store;
  const std::vector<int> phase = k.phases();
  const int phases = k.reduces.empty() ? 0 : *std::max_element(phase.begin(), phase.end());
  f.accumulators.reserve(size_t(phases));
  for (int p = 1; p <= phases + 1; ++p) {
    // The values stored per row that need only earlier phases, then this phase's reductions.
    std::vector<int> ready;
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (phase[i] == p - 1) ready.push_back(int(i));
    auto funcs = shared.define_stored(
        L, ready, f.vars, [&] { return element_context(coords); }, stored);
    f.stored.insert(f.stored.end(), funcs.begin(), funcs.end());
    if (p > phases) break;
    std::vector<int> reducing;
    for (int j : k.reduces)
      if (phase[j] == p) reducing.push_back(j);
    f.accumulators.emplace_back(L, reducing, f.kept, element_context, p);
    std::vector<Expr> at(f.kept.begin(), f.kept.end());
    for (size_t j = 0; j < reducing.size(); ++j) rows.reduced[reducing[j]] = f.accumulators.back().at(j, at);
  }

  std::vector<Expr> per_element, per_row;
  Lowering::Context elements = element_context(coords);
  for (int o : k.outputs) {
    Expr e = to_storage(L.value(o, k.nodes[o].per_row ? rows : elements), k.nodes[o].node->dtype);
    (k.nodes[o].per_row ? per_row : per_element).push_back(e);
  }
  f.per_element = !per_element.empty();
  f.per_row = !per_row.empty();
  if (f.per_element) define(f.out_elements, f.vars, per_element);
  if (f.per_row) define(f.out_rows, f.kept, per_row);
  return f;
}

}  // namespace kiln::codegen::halide
