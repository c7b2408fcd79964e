#include "fusion/plan.h"

#include <algorithm>

namespace kiln::fusion {

uint64_t begin_pass() {
  static uint64_t last = 0;  // flushes, and so passes, run one at a time
  return ++last;
}

Plan make_plan(const std::vector<ir::NodePtr>& roots) {
  const uint64_t visited = begin_pass();  // pass_value: 1 for a root, 0 for any other node
  // Iterative post-order DFS: a node is appended after all its pending inputs. The stack points
  // at the roots' and readers' own pointers (nothing changes them here): no reference counting.
  static std::vector<std::pair<const ir::NodePtr*, size_t>> stack;  // flushes run one at a time
  stack.clear();
  Plan plan;
  for (const auto& r : roots) {
    if (r->computed() || r->pass == visited) continue;
    r->pass = visited;
    r->pass_value = 0;
    stack.push_back({&r, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const ir::Node& node = **n;
      if (next < node.inputs.size()) {
        const ir::NodePtr& in = node.inputs[next++].node;
        if (in->computed() || in->pass == visited) continue;
        in->pass = visited;
        in->pass_value = 0;
        stack.push_back({&in, 0});
        continue;
      }
      plan.steps.push_back(Step{*n, false, {}});
      stack.pop_back();
    }
  }
  // In the order the program traced them (a topological order too): the partitioner groups
  // steps in this order, and a value traced early (a loss's count of targets) is then ready
  // before the passes traced after it, which can compute its readers. The DFS's order follows
  // the roots and operands instead. Leaves (constants) stay before their first reader where the
  // DFS already has the other steps in order (a chain of ops: no sort per flush); else they come
  // first, in the DFS's order. Their own numbers do not count: a constant may be a node that an
  // earlier step of the program made and reused, and the order, hashed with the plan's
  // structure, must not depend on that.
  auto leaf = [](const Step& s) { return s.node->inputs.empty(); };
  uint64_t last = 0;
  bool in_order = true;
  for (const Step& s : plan.steps) {
    if (leaf(s)) continue;
    in_order &= s.node->seq > last;
    last = s.node->seq;
  }
  if (!in_order)
    std::stable_sort(plan.steps.begin(), plan.steps.end(), [&](const Step& a, const Step& b) {
      return (leaf(a) ? 0 : a.node->seq) < (leaf(b) ? 0 : b.node->seq);
    });
  for (const auto& r : roots) r->pass_value = 1;
  for (auto& step : plan.steps) step.is_root = step.node->pass_value == 1;
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
