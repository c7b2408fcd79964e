// Runs a block of code with its flushes' kernel lists handed to a test's own function (instead of
// the flush driver's backend): a flush hook that plans, rewrites and partitions as
// codegen/flush.cpp does. The Cuda tests capture and emulate kernels with it.
#pragma once
#include <functional>

#include "codegen/flush.h"
#include "fusion/passes.h"
#include "fusion/plan.h"
#include "tracer/flush_hook.h"

namespace kiln::flush_capture {

using PartitionRunner = std::function<void(const fusion::Partition&)>;

inline PartitionRunner*& partition_runner() {
  static PartitionRunner* runner = nullptr;
  return runner;
}

inline void flush_through_runner(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded) {
  fusion::Plan plan = fusion::make_plan(std::move(roots), recorded);
  if (plan.steps.empty()) return;
  fusion::eliminate_common_subexpressions(plan);
  fusion::simplify(plan);
  (*partition_runner())(fusion::partition_cached(plan));
  fusion::forget_computed_inputs(plan);
}

// Calls body() with every flush's kernels run by `runner`, then restores the flush driver.
template <typename F>
void with_partition_runner(PartitionRunner runner, F&& body) {
  partition_runner() = &runner;
  tracer::set_flush_hook(&flush_through_runner);
  struct Restore {
    ~Restore() {
      codegen::install_flush_driver();
      partition_runner() = nullptr;
    }
  } restore;
  body();
}

}  // namespace kiln::flush_capture
