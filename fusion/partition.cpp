// Partitioning: elementwise nodes join the kernel of their latest producer when they share its
// iteration domain and read it without a view change; a reduction recomputes its elementwise
// producer chain as a prologue instead of reading it from memory; everything else is a library
// kernel. A node reaches memory only if a live tensor holds it or another kernel reads it.
#include <algorithm>
#include <sstream>
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

// The operand reads `producer`'s output exactly in its own layout (size-1 dims aside).
bool identity_view(const ir::Operand& o) {
  const Shape& shape = o.node->shape;
  if (o.view.offset != 0 || o.view.sizes != shape) return false;
  Shape expected = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && o.view.strides[d] != expected[d]) return false;
  return true;
}

struct Proto {
  Kernel::Kind kind;
  Shape domain;
  std::vector<int> members;  // step indices
};

// Drops size-1 dims and merges adjacent dims that every access walks contiguously, as PyTorch's
// TensorIterator does: a contiguous [512, 1024] elementwise kernel becomes one loop of 524288.
void coalesce(Kernel& k, const std::vector<Shape>& output_strides) {
  const size_t rank = k.domain.size();
  std::vector<Shape*> accesses;
  for (auto& r : k.reads) accesses.push_back(&r.strides);
  std::vector<Shape> outs = output_strides;
  for (auto& o : outs) accesses.push_back(&o);
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
                                   [&](Shape* s) { return (*s)[keep[i - 1]] == (*s)[d] * k.domain[d]; });
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
    reduced = {false};
    for (auto& s : strides) s = {0};
  }
  k.domain = domain;
  k.reduced = reduced;
  for (size_t r = 0; r < k.reads.size(); ++r) k.reads[r].strides = strides[r];
}

}  // namespace

std::vector<Kernel> partition(const Plan& plan, std::vector<std::vector<Node*>>* release) {
  const int n = int(plan.steps.size());
  std::unordered_map<const Node*, int> step_of;
  for (int i = 0; i < n; ++i) step_of[plan.steps[i].node.get()] = i;
  auto pending = [&](const Node* p) {
    auto it = step_of.find(p);
    return it == step_of.end() ? -1 : it->second;
  };

  // 1. Assign each step to a proto-kernel.
  std::vector<Proto> protos;
  std::vector<int> kernel_of(n, -1);
  for (int i = 0; i < n; ++i) {
    const Node& node = *plan.steps[i].node;
    int latest = -1;
    for (const auto& in : node.inputs)
      if (int j = pending(in.node.get()); j >= 0 && !is_const(*in.node)) latest = std::max(latest, kernel_of[j]);
    // Join the newest pointwise kernel over the same domain that comes no earlier than every
    // producer's kernel (so no dependency points backwards), reading its members in place. Joining
    // one that is not a producer's merges independent work over one domain into one pass.
    int join = -1;
    if (is_pointwise(node))
      for (int p = int(protos.size()) - 1; p >= std::max(latest, 0) && p >= int(protos.size()) - 8; --p) {
        if (protos[p].kind != Kernel::Kind::Pointwise || protos[p].domain != node.shape) continue;
        bool ok = true;
        for (const auto& in : node.inputs)
          if (int j = pending(in.node.get()); j >= 0 && kernel_of[j] == p && !is_const(*in.node)) ok &= identity_view(in);
        if (ok) join = p;
        break;
      }
    if (join >= 0) {
      protos[join].members.push_back(i);
      kernel_of[i] = join;
      continue;
    }
    Kernel::Kind kind = is_pointwise(node) ? Kernel::Kind::Pointwise
                        : is_reduction(node) ? Kernel::Kind::Reduction
                                             : Kernel::Kind::Library;
    protos.push_back({kind, node.shape, {i}});
    kernel_of[i] = int(protos.size()) - 1;
  }

  // 2. Which pointwise values reach memory. A reduction reading its producer in place recomputes it.
  auto prologue_of = [&](int i) -> int {  // the step a reduction inlines, or -1
    const Node& node = *plan.steps[i].node;
    if (!is_reduction(node)) return -1;
    int j = pending(node.inputs[0].node.get());
    if (j < 0 || protos[kernel_of[j]].kind != Kernel::Kind::Pointwise || !identity_view(node.inputs[0])) return -1;
    return j;
  };
  std::vector<bool> materialize(n, false);
  for (int i = 0; i < n; ++i) {
    if (plan.steps[i].is_root || protos[kernel_of[i]].kind != Kernel::Kind::Pointwise) materialize[i] = true;
    const int inlined = prologue_of(i);
    for (const auto& in : plan.steps[i].node->inputs)
      if (int j = pending(in.node.get()); j >= 0 && kernel_of[j] != kernel_of[i] && j != inlined &&
                                          !(is_const(*in.node) && protos[kernel_of[i]].kind != Kernel::Kind::Library))
        materialize[j] = true;
  }

  // 3. Emit kernels: each takes the nodes its outputs need from its proto (plus, for a
  // reduction, its prologue's), and reads everything else.
  std::vector<Kernel> kernels;
  std::unordered_map<Node*, int> last_reader;  // materialized intermediate -> kernel index
  for (const Proto& proto : protos) {
    Kernel k;
    k.kind = proto.kind;
    std::vector<int> steps;  // the steps this kernel computes, in order
    std::vector<Shape> output_strides;
    if (proto.kind == Kernel::Kind::Library) {
      const Node& node = *plan.steps[proto.members[0]].node;
      k.library_node = plan.steps[proto.members[0]].node;
      for (const auto& in : node.inputs) k.reads.push_back({in.node.get(), in.view.strides, in.view.offset});
    } else {
      std::vector<int> wanted;  // steps whose values the kernel must produce
      if (proto.kind == Kernel::Kind::Pointwise) {
        for (int m : proto.members)
          if (materialize[m]) wanted.push_back(m);
        if (wanted.empty()) continue;  // fully recomputed by reductions
      } else {
        wanted.push_back(proto.members[0]);
      }
      // Backward closure of the wanted steps within their proto (and the prologue's proto).
      std::vector<bool> in_kernel(n, false);
      std::vector<int> stack = wanted;
      const int prologue = proto.kind == Kernel::Kind::Reduction ? prologue_of(proto.members[0]) : -1;
      const int home = prologue >= 0 ? kernel_of[prologue] : kernel_of[wanted[0]];
      while (!stack.empty()) {
        int s = stack.back();
        stack.pop_back();
        if (in_kernel[s]) continue;
        in_kernel[s] = true;
        const Node& node = *plan.steps[s].node;
        for (size_t a = 0; a < node.inputs.size(); ++a) {
          int j = pending(node.inputs[a].node.get());
          if (j < 0 || in_kernel[j]) continue;
          const bool same = kernel_of[j] == home && kernel_of[s] == home && !materialize[j] && identity_view(node.inputs[a]);
          if (same || (j == prologue && !materialize[j]) || is_const(*node.inputs[a].node)) stack.push_back(j);
        }
      }
      for (int s = 0; s < n; ++s)
        if (in_kernel[s]) steps.push_back(s);
      std::unordered_map<int, int> local;  // step -> kernel node index
      for (int s : steps) {
        const Node& node = *plan.steps[s].node;
        KernelNode kn{plan.steps[s].node.get(), {}};
        for (const auto& in : node.inputs) {
          int j = pending(in.node.get());
          if (j >= 0 && local.count(j)) {
            kn.args.push_back(local[j]);
            continue;
          }
          Read r{in.node.get(), in.view.strides, in.view.offset};
          int index = -1;
          for (size_t e = 0; e < k.reads.size(); ++e)
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
      if (proto.kind == Kernel::Kind::Pointwise) {
        k.domain = plan.steps[wanted[0]].node->shape;
        for (size_t o = 0; o < k.outputs.size(); ++o) output_strides.push_back(contiguous_strides(k.domain));
      } else {
        const Node& red = *plan.steps[wanted[0]].node;
        k.domain = red.inputs[0].view.sizes;
        k.reduced.assign(k.domain.size(), false);
        for (auto a : red.ints) k.reduced[a] = true;
        Shape out = contiguous_strides(red.shape);
        for (auto a : red.ints) out[a] = 0;
        output_strides.push_back(out);
      }
      coalesce(k, output_strides);
    }
    for (const auto& r : k.reads)
      if (pending(r.node) >= 0 && !plan.steps[pending(r.node)].is_root) last_reader[r.node] = int(kernels.size());
    kernels.push_back(std::move(k));
  }
  if (release) {
    release->assign(kernels.size(), {});
    for (auto [node, k] : last_reader) (*release)[k].push_back(node);
  }
  return kernels;
}

std::string Kernel::key() const {
  std::ostringstream os;
  const char* kinds[] = {"P", "R", "L"};
  os << kinds[int(kind)] << domain.size() << ":";
  for (bool r : reduced) os << (r ? 'r' : 'k');
  for (const auto& r : reads) {
    os << "|i" << dtype_name(r.node->dtype) << ":";
    for (auto s : r.strides) os << (s == 0 ? '0' : s == 1 ? '1' : 's');
  }
  for (const auto& kn : nodes) {
    os << "|" << ir::op_name(kn.node->op) << "." << dtype_name(kn.node->dtype) << "(";
    for (int a : kn.args) os << a << ",";
    os << ")";
  }
  os << "|o";
  for (int o : outputs) os << o << ",";
  return os.str();
}

}  // namespace kiln::fusion
