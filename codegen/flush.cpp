#include "codegen/flush.h"

#include "codegen/cuda/launcher.h"
#include "codegen/halide/backend.h"
#include "codegen/unfused.h"
#include "fusion/device_split.h"
#include "fusion/passes.h"
#include "fusion/plan.h"
#include "runtime/config.h"
#include "runtime/stats.h"
#include "tracer/flush_hook.h"

namespace kiln::codegen {
namespace {

// The device a plan runs on: a CUDA device where a step is on one or reads its memory (the host
// values it reads are then uploaded, and the host tensors it computes copied back), else the CPU.
int plan_device(const fusion::Plan& plan) {
  for (const fusion::Step& s : plan.steps) {
    if (s.node->cuda_device >= 0) return s.node->cuda_device;
    for (const auto& in : s.node->inputs)
      if (in.node->computed() && in.node->result->cuda_device() >= 0) return in.node->result->cuda_device();
  }
  return -1;
}

}  // namespace

void flush(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded) {
  fusion::Plan plan = fusion::make_plan(std::move(roots), recorded);
  if (plan.steps.empty()) return;
  stats_add(&Stats::flushes, 1);
  if (config().rewrite_plans) {
    fusion::eliminate_common_subexpressions(plan);
    fusion::simplify(plan);
  }
  auto backend = [](int device) -> Backend& { return device >= 0 ? cuda_backend(device) : current_backend(); };
  std::vector<fusion::DevicePart> parts = fusion::split_by_device(plan);
  if (parts.empty()) backend(plan_device(plan)).run(fusion::partition_cached(plan));
  for (fusion::DevicePart& part : parts) backend(part.device).run(fusion::partition_cached(part.plan));
  fusion::forget_computed_inputs(plan);
  stats_add(&Stats::nodes_executed, int64_t(plan.steps.size()));
}

void install_flush_driver() { tracer::set_flush_hook(&flush); }

Backend& current_backend() {
  if (config().backend == "unfused") return unfused_backend();
  return config().backend == "halide" ? halide_backend() : interpreter();
}

}  // namespace kiln::codegen
