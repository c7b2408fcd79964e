// Partitioning a plan into kernels.
//
// 1. Grouping: an elementwise node joins the newest pointwise group over its domain that comes no
//    earlier than any of its producers' groups, provided it reads that group's members in place;
//    an elementwise node over a reduction's output joins the reduction as epilogue. A reduction
//    over rows (trailing dims) grows into a row kernel: elementwise nodes over its input's domain
//    that read its results broadcast along the rows join it, and so do later reductions over the
//    same rows (softmax: max, then the sum of exp(x - max), then the output, per row in cache).
//    A row kernel that would write several values per element keeps only its reductions and
//    per-row values; the per-element values are grouped again, outside it (Partitioner::run).
// 2. Materialization: a value reaches memory only if a live tensor holds it or some kernel cannot
//    compute it itself. A consumer kernel computes an elementwise producer it reads in place when
//    the producer has no other use, or when it is cheap enough to compute twice (its operations
//    weighed by ir::op_cost: an exp, log or erf read by two kernels is computed once).
// 3. Emission: each kernel takes what its outputs need, reading everything else.
#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "fusion/kernel.h"

namespace kiln::fusion {
namespace {

using ir::Node;
using ir::Op;
using ir::OpKind;

bool is_pointwise(const Node& n) {
  switch (ir::op_kind(n.op)) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Compare:
    case OpKind::Select: return true;
    case OpKind::Leaf: return n.op == Op::Const;
    case OpKind::Reduce:
    case OpKind::ArgReduce:
    case OpKind::Matmul:
    case OpKind::Gather:
    case OpKind::Cat:
    case OpKind::WriteView:
    case OpKind::Scan:
    case OpKind::Sort: return false;
  }
  return false;
}
bool is_reduction(const Node& n) { return ir::op_kind(n.op) == OpKind::Reduce; }
// A constant is the same under any view: every kernel reading one computes it inline (its value
// is an argument), so constants never separate kernels.
bool is_const(const Node& n) { return n.op == Op::Const; }

Shape without_ones(const Shape& s) {
  Shape out;
  for (auto e : s)
    if (e != 1) out.push_back(e);
  return out;
}
// Two shapes hold the same elements in the same order: equal once size-1 dims are dropped.
bool same_elements(const Shape& a, const Shape& b) { return without_ones(a) == without_ones(b); }

// The operand reads its producer's elements in order, through a view that may add or drop size-1
// dims (a reduction's kept dims reshaped away: sum() to a scalar).
bool reshaped_identity_view(const ir::Operand& o) {
  if (o.view.offset != 0 || !same_elements(o.view.sizes, o.node->shape)) return false;
  const Shape expected = contiguous_strides(without_ones(o.node->shape));
  size_t e = 0;
  for (size_t d = 0; d < o.view.sizes.size(); ++d)
    if (o.view.sizes[d] != 1 && o.view.strides[d] != expected[e++]) return false;
  return true;
}
// The operand reads its producer's output exactly in the producer's layout (size-1 dims aside).
bool identity_view(const ir::Operand& o) { return o.view.sizes == o.node->shape && reshaped_identity_view(o); }

// Operations (ir::op_cost) a consumer may compute again rather than read. Set when the limit
// counted nodes; a transcendental function (20) is always over it.
constexpr int kRecomputeLimit = 12;
// Kernels stay small enough to compile quickly: Halide's lowering takes time that grows faster than
// a kernel's size (2000 dependent tiny ops compiled for 60 s as one kernel; an Adam step over 40
// parameters, 15 s). A group of kGroupNodes members takes no more independent computations (the
// next parameter's update starts a kernel of its own), and one of twice that takes nothing more
// but constants (which every reader computes inline).
constexpr size_t kGroupNodes = 128;
constexpr int64_t kMaxRowElements = 1 << 16;    // a row kernel's row stays in cache
constexpr int kMaxRowKernelElementOutputs = 1;  // see Partitioner::run

struct Proto {
  Kernel::Kind kind;
  Shape domain;               // where members are computed (a reduction's: its input's shape)
  Shape out_shape;            // Reduction: the reduced shape, the domain of its epilogue
  std::vector<int64_t> axes;  // Reduction: the reduced axes
  std::vector<int> members;
};

// A reduction over trailing dims, with rows short enough to stay in cache and some dim kept.
bool over_rows(const Proto& p) {
  if (p.kind != Kernel::Kind::Reduction || p.axes.empty() || p.axes.size() >= p.domain.size()) return false;
  for (auto a : p.axes)
    if (a < int64_t(p.domain.size() - p.axes.size())) return false;
  const int64_t rows = numel_of(p.out_shape);
  return rows > 0 && numel_of(p.domain) / rows <= kMaxRowElements && p.out_shape != p.domain;
}

// The operand reads a per-row value at every element of its row: `row`'s layout broadcast along
// the reduced axes.
bool row_broadcast(const ir::Operand& o, const Proto& p) {
  if (o.view.offset != 0 || o.view.sizes != p.domain) return false;
  Shape row_strides = contiguous_strides(p.out_shape);
  for (size_t d = 0; d < p.domain.size(); ++d) {
    if (p.domain[d] == 1) continue;
    const bool reduced = std::find(p.axes.begin(), p.axes.end(), int64_t(d)) != p.axes.end();
    if (o.view.strides[d] != (reduced ? 0 : row_strides[d])) return false;
  }
  return true;
}

// Drops size-1 dims and merges adjacent dims that every access walks contiguously, as PyTorch's
// TensorIterator does: a contiguous [512, 1024] elementwise kernel becomes one loop of 524288.
void coalesce(Kernel& k, const std::vector<Shape>& output_strides) {
  const size_t rank = k.domain.size();
  std::vector<const Shape*> accesses;
  for (auto& r : k.reads) accesses.push_back(&r.strides);
  for (auto& o : output_strides) accesses.push_back(&o);
  if (k.reduced.size() != rank) k.reduced.assign(rank, false);
  std::vector<size_t> keep;
  for (size_t d = 0; d < rank; ++d)
    if (k.domain[d] != 1) keep.push_back(d);
  Shape domain;
  std::vector<bool> reduced;
  std::vector<Shape> strides(accesses.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    const size_t d = keep[i];
    // An outer dim merges with the next inner one when every access steps over the inner one
    // exactly: stride(outer) == stride(inner) * size(inner).
    const bool merge = i > 0 && reduced.back() == k.reduced[d] &&
                       std::all_of(accesses.begin(), accesses.end(),
                                   [&](const Shape* s) { return (*s)[keep[i - 1]] == (*s)[d] * k.domain[d]; });
    if (merge) {
      domain.back() *= k.domain[d];
      for (size_t a = 0; a < accesses.size(); ++a) strides[a].back() = (*accesses[a])[d];
    } else {
      domain.push_back(k.domain[d]);
      reduced.push_back(k.reduced[d]);
      for (size_t a = 0; a < accesses.size(); ++a) strides[a].push_back((*accesses[a])[d]);
    }
  }
  if (domain.empty()) {  // a single element: keep one dimension so every kernel has a loop
    domain = {1};
    reduced.assign(1, false);
    for (auto& s : strides) s = {0};
  }
  k.domain = domain;
  k.reduced = reduced;
  for (size_t r = 0; r < k.reads.size(); ++r) k.reads[r].strides = strides[r];
}

class Partitioner {
 public:
  explicit Partitioner(const Plan& plan)
      : plan_(plan), n_(int(plan.steps.size())), kept_out_of_(size_t(n_)), keeps_values_out_(size_t(n_), false) {
    for (int i = 0; i < n_; ++i) {  // a step's node carries its index (see pending)
      node(i)->pass = stamp_;
      node(i)->pass_value = i;
    }
    consumers_.resize(n_);
    for (int i = 0; i < n_; ++i)
      for (size_t a = 0; a < node(i)->inputs.size(); ++a)
        if (int j = pending(node(i)->inputs[a].node.get()); j >= 0) consumers_[j].push_back({i, int(a)});
  }

  std::vector<Kernel> run(std::vector<std::vector<Node*>>* release) {
    // A row kernel pays off when it saves passes over memory with little per-element work: the
    // forward of softmax or LayerNorm (one per-element output) ran 25-30% faster as one, while
    // LayerNorm + GELU forward and backward (y, its gradient and dx per element) ran slower than
    // as separate reduction and pointwise kernels. When a row kernel would write more per-element
    // values than that, they are grouped again outside it, round after round, until it writes
    // none: it keeps its reductions and per-row values (LayerNorm's mean and variance in one pass
    // over x), and pointwise kernels compute the rest. (Which values are written follows
    // decide_materialization's heuristics: changing those can change what row kernels hold.)
    for (bool regroup = true; regroup;) {
      protos_.clear();
      group();
      decide_materialization();
      regroup = false;
      std::vector<int> element_outputs(protos_.size(), 0);
      for (int j = 0; j < n_; ++j)
        if (materialize_[j] && !per_row_[j] && protos_[kernel_of_[j]].kind == Kernel::Kind::Reduction)
          ++element_outputs[size_t(kernel_of_[j])];
      for (int j = 0; j < n_; ++j) {
        const int p = kernel_of_[j], head = protos_[size_t(p)].members[0];
        const int limit = keeps_values_out_[size_t(head)] ? 0 : kMaxRowKernelElementOutputs;
        if (materialize_[j] && !per_row_[j] && element_outputs[size_t(p)] > limit && !kept_out(j, p)) {
          kept_out_of_[size_t(j)].push_back(head);  // pairs are only added: the rounds end
          keeps_values_out_[size_t(head)] = true;
          regroup = true;
        }
      }
    }
    std::vector<Kernel> kernels;
    std::unordered_map<Node*, int> last_reader;  // materialized intermediate -> kernel index
    for (size_t p = 0; p < protos_.size(); ++p) {
      Kernel k;
      if (!emit(int(p), k)) continue;
      for (const auto& r : k.reads)
        if (int j = pending(r.node); j >= 0 && !plan_.steps[j].is_root) last_reader[r.node] = int(kernels.size());
      kernels.push_back(std::move(k));
    }
    if (release) {
      release->assign(kernels.size(), {});
      for (auto [node, k] : last_reader) (*release)[k].push_back(node);
    }
    return kernels;
  }

 private:
  Node* node(int i) const { return plan_.steps[i].node; }
  int pending(const Node* p) const { return p->pass == stamp_ ? int(p->pass_value) : -1; }

  // Element i may not join row kernel p (see run).
  bool kept_out(int i, int p) const {
    const auto& out = kept_out_of_[size_t(i)];
    return std::find(out.begin(), out.end(), protos_[size_t(p)].members[0]) != out.end();
  }

  // 1. Grouping.
  void group() {
    kernel_of_.assign(n_, -1);
    per_row_.assign(n_, false);
    for (int i = 0; i < n_; ++i) {
      const Node& nd = *node(i);
      int latest = -1;
      for (const auto& in : nd.inputs)
        if (int j = pending(in.node.get()); j >= 0 && !is_const(*in.node)) latest = std::max(latest, kernel_of_[j]);
      int join = -1;
      bool per_row = is_reduction(nd);
      // Whether every read of group p's members (constants aside) is `fitting(operand, member)`.
      auto reads_members = [&](int p, auto fitting) {
        for (const auto& in : nd.inputs)
          if (int j = pending(in.node.get()); j >= 0 && kernel_of_[j] == p && !is_const(*in.node) && !fitting(in, j))
            return false;
        return true;
      };
      auto reads_in_place = [&](int p) {
        return reads_members(p, [](const ir::Operand& in, int) { return identity_view(in); });
      };
      // Over a row kernel's domain: its per-element values read in place, its per-row ones
      // broadcast along the rows.
      auto reads_in_row = [&](int p) {
        return reads_members(p, [&](const ir::Operand& in, int j) {
          return per_row_[j] ? row_broadcast(in, protos_[p]) : identity_view(in);
        });
      };
      // Over the reduction's output: its values read in place. Or else, reshaped (a sum() to a
      // scalar, whose kept dims are dropped), over nothing but the kernel's own values and
      // constants: a read of anything else would be indexed by the node's rank, not the domain's.
      auto epilogue_of = [&](int p) {
        if (protos_[p].out_shape == nd.shape) return reads_in_place(p);
        if (!same_elements(protos_[p].out_shape, nd.shape)) return false;
        return std::all_of(nd.inputs.begin(), nd.inputs.end(), [&](const ir::Operand& in) {
          const int j = pending(in.node.get());
          return is_const(*in.node) || (j >= 0 && kernel_of_[j] == p && reshaped_identity_view(in));
        });
      };
      // Group p is not full (kGroupNodes), or this node continues a computation in it.
      auto has_room = [&](int p) {
        const size_t size = protos_[p].members.size();
        if (size < kGroupNodes || is_const(nd)) return true;
        return size < 2 * kGroupNodes && !reads_members(p, [](const ir::Operand&, int) { return false; });
      };
      if (is_pointwise(nd)) {
        const bool latest_has_room = latest >= 0 && has_room(latest);
        if (latest_has_room && protos_[latest].kind == Kernel::Kind::Reduction && epilogue_of(latest)) {
          join = latest;  // epilogue
          per_row = true;
        } else if (latest_has_room && over_rows(protos_[latest]) && !kept_out(i, latest) &&
                   protos_[latest].domain == nd.shape && reads_in_row(latest)) {
          join = latest;  // per element of a row kernel
        } else {
          // The earliest eligible group: it keeps later reductions free to share a pass.
          const int first = std::max({latest, 0, int(protos_.size()) - 8});
          for (int p = first; p < int(protos_.size()); ++p) {
            if (protos_[p].kind != Kernel::Kind::Pointwise || protos_[p].domain != nd.shape || !has_room(p)) continue;
            if (reads_in_place(p)) {
              join = p;
              break;
            }
          }
          // Else a later reduction's epilogue, over the same rows: a per-row value that is ready
          // before that reduction runs (a loss's gradient scaled by its count of targets) is then
          // at hand where the reduction's consumers per element are computed.
          if (!is_const(nd))
            for (int p = std::max(first, latest + 1); join < 0 && p < int(protos_.size()); ++p)
              if (protos_[p].kind == Kernel::Kind::Reduction && protos_[p].out_shape == nd.shape && has_room(p)) {
                join = p;
                per_row = true;
              }
        }
      }
      if (is_reduction(nd)) {
        // Sibling reductions over one domain and the same axes share a pass over their inputs
        // (LayerNorm's backward sums two rows at once), if neither needs the other.
        for (int p = int(protos_.size()) - 1; p >= std::max(latest, 0) && p >= int(protos_.size()) - 8; --p) {
          const Proto& q = protos_[p];
          if (q.kind != Kernel::Kind::Reduction || q.domain != nd.inputs[0].view.sizes || q.axes != nd.ints ||
              !has_room(p))
            continue;
          // Reading something this kernel computes, it is a later phase of a row kernel, or else
          // a kernel of its own.
          if (p == latest && !(over_rows(protos_[p]) && reads_in_row(p))) break;
          join = p;
          break;
        }
      }
      if (join < 0) {
        Kernel::Kind kind = is_pointwise(nd)   ? Kernel::Kind::Pointwise
                            : is_reduction(nd) ? Kernel::Kind::Reduction
                                               : Kernel::Kind::Library;
        Shape domain = kind == Kernel::Kind::Reduction ? nd.inputs[0].view.sizes : nd.shape;
        protos_.push_back(
            {kind, domain, nd.shape, kind == Kernel::Kind::Reduction ? nd.ints : std::vector<int64_t>{}, {}});
        join = int(protos_.size()) - 1;
      }
      protos_[join].members.push_back(i);
      kernel_of_[i] = join;
      per_row_[i] = per_row;
    }
  }

  // Operations (ir::op_cost) that computing j in another kernel takes, counted up to the limit:
  // the elementwise producers that kernel computes too, those it reads in place (as emit pulls
  // them in), whatever their group. Per-row values are read (the second pass of
  // decide_materialization writes them), and producers already materialized are read, not
  // recomputed: both end the walk (nodes are decided in order).
  int recompute_cost(int j) const {
    std::vector<int> stack{j}, seen;
    int cost = 0;
    while (!stack.empty() && cost <= kRecomputeLimit) {
      int s = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
      seen.push_back(s);
      cost += ir::op_cost(node(s)->op);
      for (const auto& in : node(s)->inputs) {
        const int p = pending(in.node.get());
        if (p < 0 || !is_pointwise(*node(p)) || is_const(*node(p)) || materialize_[p]) continue;
        if (!per_row_[p] && identity_view(in)) stack.push_back(p);
      }
    }
    return cost;
  }

  // 2. Materialization.
  void decide_materialization() {
    materialize_.assign(n_, false);
    for (int j = 0; j < n_; ++j) {
      const Node& nd = *node(j);
      if (plan_.steps[j].is_root) {
        materialize_[j] = true;
        continue;
      }
      // An epilogue value needs its reduction's result, which is only at hand in its kernel; a row
      // kernel's per-element value can be computed elsewhere from the per-row values it reads.
      const bool elementwise = is_pointwise(nd) && !per_row_[j];
      bool used_at_home = false, can_inline = true;
      std::vector<int> other_kernels;
      for (auto [i, a] : consumers_[j]) {
        const int k = kernel_of_[i];
        if (k == kernel_of_[j]) {
          used_at_home = true;
          continue;
        }
        if (std::find(other_kernels.begin(), other_kernels.end(), k) == other_kernels.end()) other_kernels.push_back(k);
        const bool consumer_computes = protos_[k].kind != Kernel::Kind::Library;
        if (is_const(nd)) {
          can_inline &= consumer_computes;
        } else {
          can_inline &= elementwise && consumer_computes && identity_view(node(i)->inputs[a]);
        }
      }
      if (other_kernels.empty() || is_const(nd)) {
        materialize_[j] = !can_inline;
      } else if (!can_inline) {
        materialize_[j] = true;
      } else {
        // Computed once elsewhere, or cheap enough to compute again. (Not moved out of a full
        // group, kGroupNodes: its reader would take in the whole group, and the cap would not hold.)
        const bool moved =
            !used_at_home && other_kernels.size() == 1 && protos_[kernel_of_[j]].members.size() < kGroupNodes;
        materialize_[j] = !moved && recompute_cost(j) > kRecomputeLimit;
      }
    }
    // A row kernel's per-element value computed by other kernels reads its per-row values there:
    // those go to memory.
    for (int j = 0; j < n_; ++j) {
      if (protos_[kernel_of_[j]].kind != Kernel::Kind::Reduction || per_row_[j] || materialize_[j]) continue;
      const bool read_elsewhere = std::any_of(consumers_[j].begin(), consumers_[j].end(), [&](std::pair<int, int> c) {
        return kernel_of_[c.first] != kernel_of_[j];
      });
      if (!read_elsewhere) continue;
      std::vector<int> stack{j};
      std::vector<bool> seen(size_t(n_), false);  // producers shared along two paths, walked once
      while (!stack.empty()) {
        const int s = stack.back();
        stack.pop_back();
        for (const auto& in : node(s)->inputs) {
          const int q = pending(in.node.get());
          if (q < 0 || kernel_of_[q] != kernel_of_[j] || materialize_[q] || is_const(*node(q)) || seen[size_t(q)])
            continue;
          seen[size_t(q)] = true;
          if (per_row_[q])
            materialize_[q] = true;
          else
            stack.push_back(q);
        }
      }
    }
  }

  // 3. Emission of proto `p` into `k`; false if it has nothing to write.
  bool emit(int p, Kernel& k) {
    const Proto& proto = protos_[p];
    k.kind = proto.kind;
    if (proto.kind == Kernel::Kind::Library) {
      const int m = proto.members[0];
      k.library_node = plan_.steps[m].node;
      for (const auto& in : node(m)->inputs) k.reads.push_back({in.node.get(), in.view.strides, in.view.offset});
      return true;
    }
    std::vector<int> wanted;
    for (int m : proto.members)
      if (materialize_[m]) wanted.push_back(m);
    if (wanted.empty()) return false;  // computed by the kernels that read it
    // The closure of the wanted values: members of this group, constants, and elementwise values
    // that are not in memory (so every reader computes them).
    std::vector<bool> in_kernel(n_, false);
    std::vector<int> stack = wanted;
    for (int m : proto.members)
      if (is_reduction(*node(m))) stack.push_back(m);
    while (!stack.empty()) {
      int s = stack.back();
      stack.pop_back();
      if (in_kernel[s]) continue;
      in_kernel[s] = true;
      for (const auto& in : node(s)->inputs) {
        int j = pending(in.node.get());
        if (j < 0 || in_kernel[j]) continue;
        const bool computed_here = is_const(*node(j)) || kernel_of_[j] == p ||
                                   (is_pointwise(*node(j)) && !materialize_[j] && identity_view(in));
        if (computed_here) stack.push_back(j);
      }
    }
    std::unordered_map<int, int> local;  // step -> kernel node index
    for (int s = 0; s < n_; ++s) {
      if (!in_kernel[s]) continue;
      KernelNode kn{node(s), {}, false};
      if (proto.kind == Kernel::Kind::Reduction && !is_const(*node(s))) {
        // A member knows its level; a producer computed here has its reader's, which its shape
        // tells: producers are pulled in only when read in place (identity views), so a producer
        // of an epilogue has the reduced shape's elements (reductions keep their dims in the IR;
        // an epilogue may drop them, see epilogue_of), and one of a prologue or per-element value
        // the domain's.
        kn.per_row = kernel_of_[s] == p
                         ? per_row_[s]
                         : same_elements(node(s)->shape, proto.out_shape) && proto.out_shape != proto.domain;
      }
      for (const auto& in : node(s)->inputs) {
        int j = pending(in.node.get());
        if (j >= 0 && local.count(j)) {
          kn.args.push_back(local[j]);
          continue;
        }
        // Size-1 dims of a view are only ever read at index 0 (an epilogue's reduced dims).
        Read r{in.node.get(), in.view.strides, in.view.offset};
        for (size_t d = 0; d < r.strides.size(); ++d)
          if (in.view.sizes[d] == 1) r.strides[d] = 0;
        int index = -1;
        for (size_t e = 0; e < k.reads.size() && index < 0; ++e)
          if (k.reads[e].node == r.node && k.reads[e].strides == r.strides && k.reads[e].offset == r.offset)
            index = int(e);
        if (index < 0) {
          k.reads.push_back(r);
          index = int(k.reads.size()) - 1;
        }
        kn.args.push_back(~index);
      }
      local[s] = int(k.nodes.size());
      k.nodes.push_back(std::move(kn));
    }
    for (int w : wanted) k.outputs.push_back(local[w]);
    k.domain = proto.domain;
    std::vector<Shape> output_strides;
    if (proto.kind == Kernel::Kind::Reduction) {
      const Node& red = *node(proto.members[0]);
      for (int m : proto.members)
        if (is_reduction(*node(m))) k.reduces.push_back(local[m]);
      k.reduced.assign(k.domain.size(), false);
      for (auto a : red.ints) k.reduced[a] = true;
      Shape per_row = contiguous_strides(red.shape);
      for (auto a : red.ints) per_row[a] = 0;
      std::stable_partition(k.outputs.begin(), k.outputs.end(), [&](int o) { return !k.nodes[o].per_row; });
      for (int o : k.outputs) output_strides.push_back(k.nodes[o].per_row ? per_row : contiguous_strides(k.domain));
    } else {
      output_strides.assign(k.outputs.size(), contiguous_strides(k.domain));
    }
    coalesce(k, output_strides);
    return true;
  }

  const Plan& plan_;
  const int n_;
  const uint64_t stamp_ = begin_pass();                      // marks the plan's nodes (ir::Node::pass)
  std::vector<std::vector<std::pair<int, int>>> consumers_;  // step -> (consumer step, operand)
  std::vector<Proto> protos_;
  std::vector<int> kernel_of_;
  std::vector<bool> per_row_;  // a Reduction's member computed once per row (see KernelNode)
  // Per element: the row kernels (by their head, the reduction that starts them) it may not join.
  std::vector<std::vector<int>> kept_out_of_;
  std::vector<bool> keeps_values_out_;  // per head: its row kernel has sent values out
  std::vector<bool> materialize_;
};

}  // namespace

std::vector<Kernel> partition(const Plan& plan, std::vector<std::vector<Node*>>* release) {
  return Partitioner(plan).run(release);
}

std::vector<int> Kernel::phases() const {
  std::vector<int> phase(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {  // nodes come in dependency order
    for (int a : nodes[i].args)
      if (!is_read(a)) phase[i] = std::max(phase[i], phase[a]);
    if (is_reduction(*nodes[i].node)) ++phase[i];
  }
  return phase;
}

bool Kernel::row_kernel() const {
  if (kind != Kind::Reduction) return false;
  for (int o : outputs)
    if (!nodes[o].per_row) return true;
  const auto phase = phases();
  return std::any_of(reduces.begin(), reduces.end(), [&](int r) { return phase[r] > 1; });
}

std::string Kernel::key() const {
  // Built by appending, not streaming: every new partition computes the key of each kernel.
  std::string key;
  key.reserve(32 + 8 * reads.size() + 24 * nodes.size());
  auto number = [&](int64_t v) {
    char digits[24];
    key.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
  };
  const char* kinds[] = {"P", "R", "L"};
  key += kinds[int(kind)];
  number(int64_t(domain.size()));
  key += ':';
  for (bool r : reduced) key += r ? 'r' : 'k';
  if (narrow_rows()) {  // the compiled-in window extents, one per dim (0: an argument)
    key += 'n';
    for (size_t d = 0; d < domain.size(); ++d) {
      number(window_extent(d));
      key += ',';
    }
  }
  if (tiny_inner()) {
    key += 'e';
    number(tiny_inner());
  }
  for (const auto& r : reads) {
    key += "|i";
    key += dtype_name(r.node->dtype);
    key += ':';
    for (auto st : r.strides) key += stride_class(st);
  }
  for (const auto& kn : nodes) {
    key += '|';
    key += ir::op_name(kn.node->op);
    key += '.';
    key += dtype_name(kn.node->dtype);
    key += '(';
    for (int a : kn.args) {
      number(a);
      key += ',';
    }
    key += ')';
    if (kind == Kind::Reduction && kn.per_row) key += '^';
  }
  key += "|o";
  for (int o : outputs) {
    number(o);
    key += ',';
  }
  return key;
}

}  // namespace kiln::fusion
