// A plan is the order in which a flush computes nodes: the live part of the segment in dependency
// order, one node per step (dead-code elimination falls out: what no root reaches is never
// visited). The passes rewrite it, and partition.cpp groups its steps into kernels, which say
// when each intermediate may be freed.
#pragma once
#include <vector>

#include "tracer/ir.h"

namespace kiln::fusion {

// Steps hold plain pointers: copying a shared pointer is a locked instruction, which waits for
// every load before it and made ordering a 2000-node segment half again as slow. The plan owns
// its roots, the roots own every step through their operands, and a pass that points an operand
// elsewhere moves the old pointer into `dropped`, so every step lives as long as the plan.
struct Step {
  ir::Node* node;
  // The pointer through which make_plan reached `node` (a root, or an operand of a reader), for
  // CSE to point other operands at this node. CSE runs first, and changes only operands that read
  // a node it drops, so this points at `node` while CSE runs; later passes may change it.
  const ir::NodePtr* owner;
  bool is_root = false;  // a live storage holds it: its result must be kept
};

struct Plan {
  std::vector<ir::NodePtr> roots;
  std::vector<Step> steps;
  std::vector<ir::NodePtr> dropped;  // nodes that passes stopped reading, kept until the flush ends
};

// A number no earlier pass used, for stamping ir::Node::pass.
uint64_t begin_pass();

// Orders the pending nodes that `roots` depend on: leaves (constants) first, the roots among
// them in the roots' order and the others as first read, then the nodes with inputs in the order
// they were recorded (by seq). With `recorded`, the thread's list that holds them, liveness is
// found by one walk back over that list; else, or when a live node is not in it (another
// thread's, or one left pending by an earlier flush), by a depth-first search from the roots.
// Both give the same steps in the same order (Step::owner may differ) while one thread records
// at a time; threads that record at once may share or invert seqs (tracer::record), and then the
// walk keeps the order of recording where the search sorts by seq: both orders are topological.
Plan make_plan(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded = nullptr);
// How many times make_plan was given a recorded list and searched instead (for tests).
uint64_t plans_searched_instead();

// After a flush: each computed step forgets its inputs (ir::forget_inputs_if_computed), which
// frees the graph above it that nothing else holds.
void forget_computed_inputs(Plan& plan);

}  // namespace kiln::fusion
