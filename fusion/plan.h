// A plan is the order in which a flush computes nodes, and when each intermediate may be freed.
// Today it is the live part of the segment in dependency order, one node per step (dead-code
// elimination falls out: what no root reaches is never visited). Partitioning into fused kernels
// replaces the one-node steps later without changing this interface.
#pragma once
#include <vector>

#include "tracer/ir.h"

namespace kiln::fusion {

struct Step {
  ir::NodePtr node;
  bool is_root = false;                  // a live storage holds it: its result must be kept
  std::vector<ir::Node*> release_after;  // intermediates whose last reader is this step (find_releases)
};

struct Plan {
  std::vector<Step> steps;
};

// A number no earlier pass used, for stamping ir::Node::pass.
uint64_t begin_pass();

// Orders the pending nodes that `roots` depend on.
Plan make_plan(const std::vector<ir::NodePtr>& roots);

// Fills each step's release_after: roots keep their results; any other node's result may be
// released after its last reader in the plan has run. (The Halide backend's partition says its
// own releases; the interpreter asks for these.)
void find_releases(Plan& plan);

}  // namespace kiln::fusion
