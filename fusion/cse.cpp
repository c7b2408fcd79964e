// Common-subexpression elimination: user code and backward formulas often compute the same value
// twice (x * x in two places, the same broadcast constant); each duplicate's readers are pointed
// at the first copy.
#include <unordered_map>

#include "fusion/passes.h"

namespace kiln::fusion {
namespace {

// Everything that makes two nodes compute the same value.
std::string signature(const ir::Node& n) {
  std::string s;
  auto put = [&](const void* p, size_t bytes) { s.append(static_cast<const char*>(p), bytes); };
  put(&n.op, sizeof n.op);
  put(&n.dtype, sizeof n.dtype);
  put(&n.scalar, sizeof n.scalar);
  for (auto v : {&n.shape, &n.ints}) {
    const size_t count = v->size();
    put(&count, sizeof count);
    put(v->data(), count * sizeof(int64_t));
  }
  for (const auto& in : n.inputs) {
    const ir::Node* p = in.node.get();
    put(&p, sizeof p);
    put(&in.view.offset, sizeof in.view.offset);
    put(in.view.sizes.data(), in.view.sizes.size() * sizeof(int64_t));
    put(in.view.strides.data(), in.view.strides.size() * sizeof(int64_t));
  }
  return s;
}

}  // namespace

void eliminate_common_subexpressions(Plan& plan) {
  std::unordered_map<std::string, ir::NodePtr> first;
  std::unordered_map<ir::Node*, ir::NodePtr> replaced;
  for (auto& step : plan.steps) {
    ir::Node& n = *step.node;
    for (auto& in : n.inputs)  // steps come in dependency order: inputs are already canonical
      if (auto it = replaced.find(in.node.get()); it != replaced.end()) in.node = it->second;
    if (n.op == ir::Op::Input) continue;
    auto [it, inserted] = first.emplace(signature(n), step.node);
    if (!inserted && !step.is_root) replaced[&n] = it->second;
  }
  if (!replaced.empty()) drop_dead_steps(plan);
}

}  // namespace kiln::fusion
