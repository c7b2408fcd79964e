#include "fusion/plan.h"

#include <algorithm>
#include <functional>

namespace kiln::fusion {

uint64_t begin_pass() {
  static uint64_t last = 0;  // flushes, and so passes, run one at a time
  return ++last;
}

namespace {

bool is_leaf(const ir::Node& n) { return n.inputs.empty(); }

uint64_t g_searches_instead = 0;  // flushes run one at a time

// A node with inputs that the roots need, and the pointer that reached it (Step::owner).
struct Reached {
  ir::Node* node;
  const ir::NodePtr* owner;
  bool is_root;
};

// Liveness by one walk back over the recorded list: a node is live when a root or a live node
// reads it. The entries are independent loads, where a search from the roots waits on each
// node's operand list to find the next node (a cache miss each on a long segment: most of a
// 2000-op flush's ordering). Returns false when a live node is not in the list.
bool reach_by_recorded(const std::vector<ir::NodePtr>& roots, const ir::RecordedNodes& recorded,
                       std::vector<Reached>& out) {
  const size_t n = recorded.size();
  static std::vector<const ir::NodePtr*> owner;  // by place in the list; null: not live (flushes run one at a time)
  owner.assign(n, nullptr);
  // A live node's place, or -1. A live node cannot share its address with a dead one; another
  // thread's node at the address of one of ours that died would need its index and seq too.
  auto place = [&](const ir::Node* p) -> int64_t {
    const size_t i = p->trace_index;
    return i < n && recorded[i].node == p && recorded[i].seq == p->seq ? int64_t(i) : -1;
  };
  for (const auto& r : roots) {
    if (r->computed() || is_leaf(*r)) continue;
    const int64_t i = place(r.get());
    if (i < 0) return false;
    if (!owner[i]) owner[i] = &r;
  }
  for (size_t i = n; i-- > 0;) {
    if (!owner[i]) continue;
    for (const auto& in : recorded[i].node->inputs) {
      const ir::Node* p = in.node.get();
      if (p->computed() || is_leaf(*p)) continue;
      const int64_t j = place(p);
      // Recorded after its reader: possible only through another thread's flush (its CSE may
      // point a reader at a node recorded later). The walk would have passed it: search.
      if (j < 0 || size_t(j) >= i) return false;
      if (!owner[j]) owner[j] = &in.node;
    }
  }
  // A root's owner is its place in `roots` (set first): no load of the node to tell.
  const ir::NodePtr *roots_begin = roots.data(), *roots_end = roots_begin + roots.size();
  const std::less<const ir::NodePtr*> before;  // defined for pointers into different arrays
  for (size_t i = 0; i < n; ++i)
    if (owner[i])
      out.push_back({recorded[i].node, owner[i], !before(owner[i], roots_begin) && before(owner[i], roots_end)});
  return true;
}

// Liveness by a depth-first search from the roots, then in the order of recording.
void reach_by_search(const std::vector<ir::NodePtr>& roots, uint64_t root, std::vector<Reached>& out) {
  const uint64_t visited = begin_pass();
  // Iterative post-order DFS: a node is appended after all its pending inputs. The stack points
  // at the roots' and readers' own pointers (nothing changes them here): no reference counting.
  struct Visit {
    const ir::NodePtr* node;
    size_t next;  // the next input to look at
    bool is_root;
  };
  static std::vector<Visit> stack;  // flushes run one at a time
  stack.clear();
  auto wanted = [&](const ir::NodePtr& n) { return !n->computed() && !is_leaf(*n) && n->pass != visited; };
  uint64_t last_seq = 0;
  bool in_order = true;  // a chain of ops comes out in order: no sort
  for (const auto& r : roots) {
    if (!wanted(r)) continue;
    stack.push_back({&r, 0, r->pass == root});
    r->pass = visited;
    while (!stack.empty()) {
      Visit& top = stack.back();
      const ir::Node& node = **top.node;
      if (top.next < node.inputs.size()) {
        const ir::NodePtr& in = node.inputs[top.next++].node;
        if (wanted(in)) {
          stack.push_back({&in, 0, in->pass == root});  // may move `top`
          in->pass = visited;
        }
        continue;
      }
      in_order &= node.seq > last_seq;
      last_seq = node.seq;
      out.push_back({top.node->get(), top.node, top.is_root});
      stack.pop_back();
    }
  }
  if (!in_order)
    std::stable_sort(out.begin(), out.end(),
                     [](const Reached& a, const Reached& b) { return a.node->seq < b.node->seq; });
}

}  // namespace

uint64_t plans_searched_instead() { return g_searches_instead; }

Plan make_plan(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded) {
  Plan plan;
  plan.roots = std::move(roots);
  const uint64_t root = begin_pass();  // leaves keep it until placed, which tells the roots among them
  for (const auto& r : plan.roots) r->pass = root;
  // The nodes with inputs, in the order the program traced them (a topological order too): the
  // partitioner groups steps in this order, and a value traced early (a loss's count of targets)
  // is then ready before the passes traced after it, which can compute its readers.
  static std::vector<Reached> reached;  // flushes run one at a time
  reached.clear();
  if (!recorded || !reach_by_recorded(plan.roots, *recorded, reached)) {
    if (recorded) ++g_searches_instead;
    reached.clear();
    reach_by_search(plan.roots, root, reached);
  }
  // Leaves (constants) come first: the roots among them in the roots' order, then the others in
  // the order they are first read, whatever their own seq (a constant may be a node an earlier
  // step of the program made and reused, and the order, hashed with the plan's structure, must
  // not depend on that). Among the other steps a constant changed the partition: it opens a group
  // of its own, which narrows the partitioner's window of recent groups (MlpStep 31 launches
  // instead of 29, with 20 kernels compiled instead of 14 for its first step).
  const uint64_t placed = begin_pass();
  auto place_leaf = [&](const ir::NodePtr& p) {
    if (p->computed() || !is_leaf(*p) || p->pass == placed) return;
    plan.steps.push_back(Step{p.get(), &p, p->pass == root});
    p->pass = placed;
  };
  for (const auto& r : plan.roots) place_leaf(r);
  for (const Reached& r : reached)
    for (const auto& in : r.node->inputs) place_leaf(in.node);
  plan.steps.reserve(plan.steps.size() + reached.size());
  for (const Reached& r : reached) plan.steps.push_back(Step{r.node, r.owner, r.is_root});
  return plan;
}

void forget_computed_inputs(Plan& plan) {
  // Freeing a chain goes down it node by node, each free finding the next node through the
  // operand list of the last: a cache miss after a cache miss (TinyOps' 2000 nodes, 9% of its
  // time). The chain is cut first, a reference held every kPiece steps; each piece's nodes are
  // asked for in one go before its cut is let go. A step's node may be dead by then (its reader
  // freed): only its address is used, and a prefetch never faults.
  constexpr size_t kPiece = 32;
  const auto& steps = plan.steps;
  std::vector<ir::NodePtr> cuts;  // cuts[k] holds an input of step (k + 1) * kPiece
  for (size_t i = kPiece; i < steps.size(); i += kPiece)
    cuts.push_back(steps[i].node->inputs.empty() ? nullptr : steps[i].node->inputs[0].node);
  for (const auto& step : steps) ir::forget_inputs_if_computed(*step.node);
  while (!cuts.empty()) {
    const size_t end = cuts.size() * kPiece;
    for (size_t i = end - kPiece; i < end; ++i) {
      // The node with the reference counts before it (std::allocate_shared's block: 16 bytes).
      const char* block = reinterpret_cast<const char*>(steps[i].node) - 16;
      for (size_t line = 0; line < 16 + sizeof(ir::Node); line += 64) __builtin_prefetch(block + line);
    }
    cuts.pop_back();
  }
}

}  // namespace kiln::fusion
