// Common-subexpression elimination: user code and backward formulas often compute the same value
// twice (x * x in two places, the same broadcast constant); each duplicate's readers are pointed
// at the first copy.
#include <cstring>
#include <vector>

#include "fusion/passes.h"
#include "runtime/disk_cache.h"

namespace kiln::fusion {
namespace {

// Everything that makes two nodes compute the same value: op, attributes, and the same operands
// read through the same views. Hashed and compared in place (no key is built per node).
struct SameValueHash {
  uint64_t operator()(const ir::Node* n) const {
    uint64_t h = kFnvOffsetBasis;
    auto mix = [&](uint64_t v) { h = fnv1a64_word(h, v); };
    mix(uint64_t(n->op));
    mix(uint64_t(n->dtype));
    uint64_t bits;
    std::memcpy(&bits, &n->scalar, sizeof bits);
    mix(bits);
    for (auto d : n->shape) mix(uint64_t(d));
    for (auto v : n->ints) mix(uint64_t(v) + 0x9e3779b97f4a7c15ull);
    for (const auto& in : n->inputs) {
      mix(uint64_t(reinterpret_cast<uintptr_t>(in.node.get())));
      mix(uint64_t(in.view.offset));
      for (auto st : in.view.strides) mix(uint64_t(st));
    }
    return h;
  }
};
struct SameValue {
  bool operator()(const ir::Node* a, const ir::Node* b) const {
    if (a->op != b->op || a->dtype != b->dtype || std::memcmp(&a->scalar, &b->scalar, sizeof a->scalar) != 0 ||
        a->shape != b->shape || a->ints != b->ints || a->inputs.size() != b->inputs.size())
      return false;
    for (size_t i = 0; i < a->inputs.size(); ++i) {
      const auto &x = a->inputs[i], &y = b->inputs[i];
      if (x.node != y.node || x.view.offset != y.view.offset || x.view.sizes != y.view.sizes ||
          x.view.strides != y.view.strides)
        return false;
    }
    return true;
  }
};

}  // namespace

void eliminate_common_subexpressions(Plan& plan) {
  // An open-addressing table of step indices (-1: empty), at most half full, kept between flushes
  // (they run one at a time): a per-node hash-map entry was a large part of a tiny op's cost. Each
  // slot keeps its hash's high bits too, so that a probe past another node compares numbers, not
  // that node (one cache miss each).
  struct Slot {
    int32_t step;
    uint32_t tag;
  };
  static std::vector<Slot> table;
  size_t capacity = 16;
  while (capacity < 2 * plan.steps.size()) capacity *= 2;
  table.assign(capacity, Slot{-1, 0});
  const size_t mask = capacity - 1;
  // A duplicate is stamped `redirected`, with the index of the step its readers now read.
  const uint64_t redirected = begin_pass();
  bool any = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Step& step = plan.steps[i];
    ir::Node& n = *step.node;
    for (auto& in : n.inputs)  // steps come in dependency order: inputs are already canonical
      if (in.node->pass == redirected) {
        const ir::NodePtr& same = *plan.steps[size_t(in.node->pass_value)].owner;
        plan.dropped.push_back(std::move(in.node));
        in.node = same;
      }
    if (n.op == ir::Op::Input) continue;
    const uint64_t hash = SameValueHash{}(&n);
    const uint32_t tag = uint32_t(hash >> 32);
    size_t slot = hash & mask;
    while (table[slot].step >= 0 &&
           (table[slot].tag != tag || !SameValue{}(plan.steps[size_t(table[slot].step)].node, &n)))
      slot = (slot + 1) & mask;
    if (table[slot].step < 0) {
      table[slot] = Slot{int32_t(i), tag};
    } else if (!step.is_root) {
      n.pass = redirected;
      n.pass_value = table[slot].step;
      any = true;
    }
  }
  if (any) drop_dead_steps(plan);
}

}  // namespace kiln::fusion
