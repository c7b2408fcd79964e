#include "fusion/plan.h"

#include <unordered_map>
#include <unordered_set>

namespace kiln::fusion {

Plan make_plan(const std::vector<ir::NodePtr>& roots) {
  Plan plan;
  std::unordered_map<ir::Node*, int> readers;  // pending readers of each visited node
  std::unordered_set<ir::Node*> visited;
  // Iterative post-order DFS: a node is appended after all its pending inputs.
  std::vector<std::pair<ir::Node*, size_t>> stack;
  std::vector<ir::Node*> order;
  for (const auto& r : roots) {
    if (r->computed() || !visited.insert(r.get()).second) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        ir::Node* in = n->inputs[next++].node.get();
        ++readers[in];
        if (!in->computed() && visited.insert(in).second) stack.push_back({in, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  std::unordered_set<ir::Node*> root_set;
  for (const auto& r : roots) root_set.insert(r.get());
  // Walk forward, releasing an intermediate after its last reader. Holding NodePtrs in the plan
  // keeps every node alive for the flush; results are what gets released.
  std::unordered_map<ir::Node*, ir::NodePtr> owners;
  for (ir::Node* n : order)
    for (auto& in : n->inputs) owners.emplace(in.node.get(), in.node);
  for (const auto& r : roots) owners.emplace(r.get(), r);
  for (ir::Node* n : order) {
    Step step{owners.at(n), root_set.count(n) > 0, {}};
    for (auto& in : n->inputs) {
      ir::Node* p = in.node.get();
      if (--readers[p] == 0 && !root_set.count(p) && visited.count(p)) step.release_after.push_back(p);
    }
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

}  // namespace kiln::fusion
