// How a flush gets computed: the tracer hands the pending nodes to a hook that the flush driver
// (codegen/flush.cpp, installed by the frontend before main) fills in, so that the tracer imports
// nothing above it in the pipeline.
#pragma once
#include <vector>

#include "tracer/ir.h"

namespace kiln::tracer {

// Computes `roots` and what they need, leaving each root's result set. `recorded` is the thread's
// list of nodes recorded since its last flush (or null), for ordering them (fusion::make_plan).
// Called with the flush lock held and `roots` not empty.
using FlushHook = void (*)(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded);

void set_flush_hook(FlushHook hook);

}  // namespace kiln::tracer
