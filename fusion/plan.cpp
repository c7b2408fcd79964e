#include "fusion/plan.h"

#include <algorithm>

namespace kiln::fusion {

uint64_t begin_pass() {
  static uint64_t last = 0;  // flushes, and so passes, run one at a time
  return ++last;
}

Plan make_plan(const std::vector<ir::NodePtr>& roots) {
  // Visited nodes carry this pass's stamp; their pass_value counts their readers in the plan.
  const uint64_t visited = begin_pass();
  auto visit = [&](ir::Node& n) {
    if (n.pass == visited) return false;
    n.pass = visited;
    n.pass_value = 0;
    return true;
  };
  // Iterative post-order DFS: a node is appended after all its pending inputs. The stack points
  // at the roots' and readers' own pointers (nothing changes them here): no reference counting.
  std::vector<std::pair<const ir::NodePtr*, size_t>> stack;
  std::vector<ir::NodePtr> order;
  for (const auto& r : roots) {
    if (r->computed() || !visit(*r)) continue;
    stack.push_back({&r, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const ir::Node& node = **n;
      if (next < node.inputs.size()) {
        const ir::NodePtr& in = node.inputs[next++].node;
        if (in->computed()) continue;
        const bool first = visit(*in);
        ++in->pass_value;
        if (first) stack.push_back({&in, 0});
        continue;
      }
      order.push_back(*n);
      stack.pop_back();
    }
  }
  std::vector<const ir::Node*> root_nodes;
  for (const auto& r : roots) root_nodes.push_back(r.get());
  std::sort(root_nodes.begin(), root_nodes.end());
  auto is_root = [&](const ir::Node* n) { return std::binary_search(root_nodes.begin(), root_nodes.end(), n); };
  // Walk forward, releasing an intermediate after its last reader. Holding NodePtrs in the plan
  // keeps every node alive for the flush; results are what gets released.
  Plan plan;
  plan.steps.reserve(order.size());
  for (auto& n : order) {
    Step step{n, is_root(n.get()), {}};
    for (auto& in : n->inputs) {
      ir::Node* p = in.node.get();
      if (p->pass == visited && --p->pass_value == 0 && !is_root(p)) step.release_after.push_back(p);
    }
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

}  // namespace kiln::fusion
