#include "codegen/unfused.h"

#include <unordered_map>

#include "codegen/per_op_kernels.h"
#include "codegen/tiled_kernels.h"
#include "runtime/stats.h"

namespace kiln::codegen {
namespace {

class UnfusedBackend final : public Backend {
 public:
  const char* name() const override { return "unfused"; }
  void run(const fusion::Partition& partition) override {
    for (size_t i = 0; i < partition.kernels.size(); ++i) {
      run_unfused(partition.kernels[i]);
      for (ir::Node* done : partition.release[i]) done->result.reset();
    }
    if (!partition.kernels.empty()) stats_add(&Stats::flushes_unfused, 1);
  }
};

}  // namespace

std::vector<std::vector<size_t>> last_reads(const fusion::Kernel& k) {
  const size_t count = k.nodes.size();
  std::vector<size_t> last_use(count, 0);
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < count; ++i) {
    last_use[i] = i;
    index.emplace(k.nodes[i].node, i);
    for (const ir::Operand& o : k.nodes[i].node->inputs)
      if (auto it = index.find(o.node.get()); it != index.end()) last_use[it->second] = i;
  }
  std::vector<std::vector<size_t>> frees(count);
  for (size_t i = 0; i < count; ++i) frees[last_use[i]].push_back(i);
  return frees;
}

void run_unfused(const fusion::Kernel& k) {
  if (k.kind == fusion::Kernel::Kind::Library) {
    run_node(*k.library_node);
    stats_add(&Stats::kernel_launches, 1);
    return;
  }
  if (run_tiled(k)) {  // one pass over memory, as the fused kernel
    stats_add(&Stats::kernel_launches, 1);
    stats_add(&Stats::kernels_unfused, 1);
    return;
  }
  // Node by node: an intermediate is freed after its last reader in the kernel; outputs and what was in memory
  // before (a constant another kernel already wrote) are kept.
  const size_t count = k.nodes.size();
  std::vector<bool> keep(count, false);
  for (int o : k.outputs) keep[size_t(o)] = true;
  const std::vector<std::vector<size_t>> frees = last_reads(k);
  int64_t computed = 0, interpreted = 0;
  for (size_t i = 0; i < count; ++i) {
    ir::Node& n = *k.nodes[i].node;
    if (n.computed()) {
      keep[i] = true;
    } else if (has_per_op_kernel(n)) {
      compute_per_op(n);
      ++computed;
    } else {
      run_node(n);
      ++computed;
      ++interpreted;
    }
    for (size_t j : frees[i])
      if (!keep[j]) k.nodes[j].node->result.reset();
  }
  stats_add(&Stats::kernel_launches, computed);
  stats_add(&Stats::kernels_unfused, 1);
  if (interpreted) stats_add(&Stats::nodes_interpreted, interpreted);
}

Backend& unfused_backend() {
  static UnfusedBackend backend;
  return backend;
}

}  // namespace kiln::codegen
