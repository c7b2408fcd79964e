// Partitioning a plan into kernels.
//
// 1. Grouping: an elementwise node joins the newest pointwise group over its domain that comes no
//    earlier than any of its producers' groups, provided it reads that group's members in place;
//    an elementwise node over a reduction's output joins the reduction as epilogue.
// 2. Materialization: a value reaches memory only if a live tensor holds it or some kernel cannot
//    compute it itself. A consumer kernel computes an elementwise producer it reads in place when
//    the producer has no other use, or when it is cheap enough to compute twice.
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
    default: return false;
  }
}
bool is_reduction(const Node& n) { return ir::op_kind(n.op) == OpKind::Reduce; }
// A constant is the same under any view: every kernel reading one computes it inline (its value
// is an argument), so constants never separate kernels.
bool is_const(const Node& n) { return n.op == Op::Const; }

// The operand reads its producer's output exactly in the producer's layout (size-1 dims aside).
bool identity_view(const ir::Operand& o) {
  const Shape& shape = o.node->shape;
  if (o.view.offset != 0 || o.view.sizes != shape) return false;
  Shape expected = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && o.view.strides[d] != expected[d]) return false;
  return true;
}

constexpr int kRecomputeLimit = 12;  // nodes a consumer may recompute rather than read

struct Proto {
  Kernel::Kind kind;
  Shape domain;     // where members are computed (a reduction's: its input's shape)
  Shape out_shape;  // Reduction: the reduced shape, the domain of its epilogue
  std::vector<int64_t> axes;  // Reduction: the reduced axes
  std::vector<int> members;
};

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
  explicit Partitioner(const Plan& plan) : plan_(plan), n_(int(plan.steps.size())) {
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
    group();
    decide_materialization();
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
  Node* node(int i) const { return plan_.steps[i].node.get(); }
  int pending(const Node* p) const {
    return p->pass == stamp_ ? int(p->pass_value) : -1;
  }

  // 1. Grouping.
  void group() {
    kernel_of_.assign(n_, -1);
    for (int i = 0; i < n_; ++i) {
      const Node& nd = *node(i);
      int latest = -1;
      for (const auto& in : nd.inputs)
        if (int j = pending(in.node.get()); j >= 0 && !is_const(*in.node)) latest = std::max(latest, kernel_of_[j]);
      int join = -1;
      if (is_pointwise(nd)) {
        auto reads_in_place = [&](int p) {
          for (const auto& in : nd.inputs)
            if (int j = pending(in.node.get()); j >= 0 && kernel_of_[j] == p && !is_const(*in.node) && !identity_view(in))
              return false;
          return true;
        };
        if (latest >= 0 && protos_[latest].kind == Kernel::Kind::Reduction && protos_[latest].out_shape == nd.shape &&
            reads_in_place(latest)) {
          join = latest;  // epilogue
        } else {
          // The earliest eligible group: it keeps later reductions free to share a pass.
          for (int p = std::max({latest, 0, int(protos_.size()) - 8}); p < int(protos_.size()); ++p) {
            if (protos_[p].kind != Kernel::Kind::Pointwise || protos_[p].domain != nd.shape) continue;
            if (reads_in_place(p)) {
              join = p;
              break;
            }
          }
        }
      }
      if (is_reduction(nd)) {
        // Sibling reductions over one domain and the same axes share a pass over their inputs
        // (LayerNorm's backward sums two rows at once), if neither needs the other.
        for (int p = int(protos_.size()) - 1; p >= std::max(latest, 0) && p >= int(protos_.size()) - 8; --p) {
          const Proto& q = protos_[p];
          if (q.kind != Kernel::Kind::Reduction || q.domain != nd.inputs[0].view.sizes || q.axes != nd.ints) continue;
          if (p == latest) break;  // reads something this kernel computes
          join = p;
          break;
        }
      }
      if (join < 0) {
        Kernel::Kind kind = is_pointwise(nd)     ? Kernel::Kind::Pointwise
                            : is_reduction(nd) ? Kernel::Kind::Reduction
                                               : Kernel::Kind::Library;
        Shape domain = kind == Kernel::Kind::Reduction ? nd.inputs[0].view.sizes : nd.shape;
        protos_.push_back({kind, domain, nd.shape, kind == Kernel::Kind::Reduction ? nd.ints : std::vector<int64_t>{}, {}});
        join = int(protos_.size()) - 1;
      }
      protos_[join].members.push_back(i);
      kernel_of_[i] = join;
    }
  }

  // Nodes of j's own group that computing j takes (bounded by the limit). Producers already
  // materialized are read, not recomputed, so they end the walk (nodes are decided in order).
  int recompute_cost(int j) const {
    std::vector<int> stack{j}, seen;
    while (!stack.empty() && int(seen.size()) <= kRecomputeLimit) {
      int s = stack.back();
      stack.pop_back();
      if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
      seen.push_back(s);
      for (const auto& in : node(s)->inputs)
        if (int p = pending(in.node.get()); p >= 0 && kernel_of_[p] == kernel_of_[j] && is_pointwise(*node(p)) &&
                                            !is_const(*node(p)) && !materialize_[p])
          stack.push_back(p);
    }
    return int(seen.size());
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
      // An epilogue value needs its reduction's result, which is only at hand in its kernel.
      const bool elementwise = is_pointwise(nd) && protos_[kernel_of_[j]].kind == Kernel::Kind::Pointwise;
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
        // Computed once elsewhere, or cheap enough to compute again.
        const bool moved = !used_at_home && other_kernels.size() == 1;
        materialize_[j] = !moved && recompute_cost(j) > kRecomputeLimit;
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
      KernelNode kn{node(s), {}};
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
          if (k.reads[e].node == r.node && k.reads[e].strides == r.strides && k.reads[e].offset == r.offset) index = int(e);
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
      Shape out = contiguous_strides(red.shape);
      for (auto a : red.ints) out[a] = 0;
      output_strides.assign(k.outputs.size(), out);
    } else {
      output_strides.assign(k.outputs.size(), contiguous_strides(k.domain));
    }
    coalesce(k, output_strides);
    return true;
  }

  const Plan& plan_;
  const int n_;
  const uint64_t stamp_ = begin_pass();  // marks the plan's nodes (ir::Node::pass)
  std::vector<std::vector<std::pair<int, int>>> consumers_;  // step -> (consumer step, operand)
  std::vector<Proto> protos_;
  std::vector<int> kernel_of_;
  std::vector<bool> materialize_;
};

}  // namespace

std::vector<Kernel> partition(const Plan& plan, std::vector<std::vector<Node*>>* release) {
  return Partitioner(plan).run(release);
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
  if (narrow_rows()) key += 'n';
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
  }
  key += "|o";
  for (int o : outputs) {
    number(o);
    key += ',';
  }
  return key;
}

}  // namespace kiln::fusion
