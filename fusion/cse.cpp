// Common-subexpression elimination: user code and backward formulas often compute the same value
// twice (x * x in two places, the same broadcast constant); each duplicate's readers are pointed
// at the first copy.
#include <cstring>
#include <vector>

#include "fusion/passes.h"
#include "runtime/hash.h"

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
    mix(uint64_t(n->int_scalar));
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
        a->int_scalar != b->int_scalar || a->shape != b->shape || a->ints != b->ints ||
        a->inputs.size() != b->inputs.size())
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

// An input of `n` that nothing but n holds, if any. (Its count cannot go up meanwhile except
// through this pass: the only pointer to it is n's operand.)
ir::Node* value_only_it_reads(const ir::Node& n) {
  for (const auto& in : n.inputs)
    if (in.node.use_count() == 1) return in.node.get();
  return nullptr;
}

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
  // The slot of step i: its equal's, or the empty one where it goes.
  auto find = [&](size_t i, uint32_t tag, uint64_t hash) {
    size_t slot = hash & mask;
    while (table[slot].step >= 0 &&
           (table[slot].tag != tag || !SameValue{}(plan.steps[size_t(table[slot].step)].node, plan.steps[i].node)))
      slot = (slot + 1) & mask;
    return slot;
  };
  // A node that reads a value nothing else holds has no duplicate: another node computing the
  // same would read that value too. Most nodes of a chain of ops are such (each step's tensor is
  // dropped by the next), and hashing them was most of this pass. Such a node is not hashed, and
  // the value it reads is stamped `sole_reader_unhashed`, with its index: should the value gain a
  // reader (a duplicate of it pointed at it), the node is hashed then.
  const uint64_t sole_reader_unhashed = begin_pass();
  auto hash_late = [&](ir::Node& value) {
    value.pass = 0;
    const size_t i = size_t(value.pass_value);
    const uint64_t hash = SameValueHash{}(plan.steps[i].node);
    const uint32_t tag = uint32_t(hash >> 32);
    table[find(i, tag, hash)] = Slot{int32_t(i), tag};  // its equal would read `value`: none is hashed
  };
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
        if (same->pass == sole_reader_unhashed) hash_late(*same);
      }
    if (n.op == ir::Op::Input) continue;
    if (ir::Node* value = value_only_it_reads(n)) {
      value->pass = sole_reader_unhashed;
      value->pass_value = int64_t(i);
      continue;
    }
    const uint64_t hash = SameValueHash{}(&n);
    const uint32_t tag = uint32_t(hash >> 32);
    const size_t slot = find(i, tag, hash);
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
