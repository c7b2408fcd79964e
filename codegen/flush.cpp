#include "codegen/flush.h"

#include "codegen/halide/backend.h"
#include "codegen/unfused.h"
#include "fusion/passes.h"
#include "fusion/plan.h"
#include "runtime/config.h"
#include "runtime/stats.h"
#include "tracer/flush_hook.h"

namespace kiln::codegen {

void flush(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded) {
  fusion::Plan plan = fusion::make_plan(std::move(roots), recorded);
  if (plan.steps.empty()) return;
  stats_add(&Stats::flushes, 1);
  if (config().rewrite_plans) {
    fusion::eliminate_common_subexpressions(plan);
    fusion::simplify(plan);
  }
  current_backend().run(fusion::partition_cached(plan));
  fusion::forget_computed_inputs(plan);
  stats_add(&Stats::nodes_executed, int64_t(plan.steps.size()));
}

void install_flush_driver() { tracer::set_flush_hook(&flush); }

Backend& current_backend() {
  if (config().backend == "unfused") return unfused_backend();
  return config().backend == "halide" ? halide_backend() : interpreter();
}

}  // namespace kiln::codegen
