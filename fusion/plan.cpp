#include "fusion/plan.h"

#include <algorithm>

namespace kiln::fusion {

uint64_t begin_pass() {
  static uint64_t last = 0;  // flushes, and so passes, run one at a time
  return ++last;
}

Plan make_plan(std::vector<ir::NodePtr> roots) {
  Plan plan;
  plan.roots = std::move(roots);
  // Each pass over the nodes is a cache miss per node on a long segment: one walk does it all.
  const uint64_t root = begin_pass();
  for (const auto& r : plan.roots) r->pass = root;
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
  // In the order the program traced them (a topological order too): the partitioner groups
  // steps in this order, and a value traced early (a loss's count of targets) is then ready
  // before the passes traced after it, which can compute its readers. The DFS's order follows
  // the roots and operands instead. Leaves (constants) stay before their first reader where the
  // DFS already has the other steps in order (a chain of ops: no sort per flush); else they come
  // first, in the DFS's order. Their own numbers do not count: a constant may be a node that an
  // earlier step of the program made and reused, and the order, hashed with the plan's
  // structure, must not depend on that.
  uint64_t last_seq = 0;
  bool in_order = true;
  auto visit = [&](const ir::NodePtr& n) {
    stack.push_back({&n, 0, n->pass == root});
    n->pass = visited;
  };
  for (const auto& r : plan.roots) {
    if (r->computed() || r->pass == visited) continue;
    visit(r);
    while (!stack.empty()) {
      Visit& top = stack.back();
      const ir::Node& node = **top.node;
      if (top.next < node.inputs.size()) {
        const ir::NodePtr& in = node.inputs[top.next++].node;
        if (!in->computed() && in->pass != visited) visit(in);  // may move `top`
        continue;
      }
      if (!node.inputs.empty()) {
        in_order &= node.seq > last_seq;
        last_seq = node.seq;
      }
      plan.steps.push_back(Step{top.node->get(), top.node, top.is_root, {}});
      stack.pop_back();
    }
  }
  if (!in_order) {
    auto leaf = [](const Step& s) { return s.node->inputs.empty(); };
    std::stable_sort(plan.steps.begin(), plan.steps.end(), [&](const Step& a, const Step& b) {
      return (leaf(a) ? 0 : a.node->seq) < (leaf(b) ? 0 : b.node->seq);
    });
  }
  return plan;
}

void find_releases(Plan& plan) {
  // Each node's readers in the plan, counted down in order: the last one releases it. A root
  // starts high enough never to reach zero.
  const uint64_t counted = begin_pass();
  for (auto& step : plan.steps) {
    step.node->pass = counted;
    step.node->pass_value = step.is_root ? int64_t(1) << 40 : 0;
  }
  for (auto& step : plan.steps)
    for (auto& in : step.node->inputs)
      if (in.node->pass == counted) ++in.node->pass_value;
  for (auto& step : plan.steps)
    for (auto& in : step.node->inputs)
      if (in.node->pass == counted && --in.node->pass_value == 0) step.release_after.push_back(in.node.get());
}

}  // namespace kiln::fusion
