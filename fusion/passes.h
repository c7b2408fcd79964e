// Rewrites of a plan before partitioning, each in its own file. They only redirect reads and drop
// nodes that no live tensor holds, so roots keep their nodes and results.
#pragma once
#include "fusion/plan.h"

namespace kiln::fusion {

// Nodes computing the same op on the same operands become one (cse.cpp). The first pass over a
// plan: it reads Step::owner.
void eliminate_common_subexpressions(Plan& plan);

// x + 0, x * 1, x / 1 and x - 0 read x; an op on constants only becomes a constant (simplify.cpp).
void simplify(Plan& plan);

// Drops steps that neither a root nor another step reads any more.
void drop_dead_steps(Plan& plan);

}  // namespace kiln::fusion
