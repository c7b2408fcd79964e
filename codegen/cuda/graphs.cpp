#include "codegen/cuda/graphs.h"

#include <cstring>

#include "runtime/config.h"
#include "runtime/hash.h"
#include "runtime/log.h"
#include "runtime/stats.h"

namespace kiln::codegen::cuda {
namespace {

namespace driver = kiln::cuda_driver;

// Runs remembered per device: past this, those never made into a graph are forgotten (a program
// of ever new structures must not grow the map without end).
constexpr size_t kMostRuns = 4096;

bool same(const HeldLaunch& a, const HeldLaunch& b) {
  return a.function == b.function && a.grid == b.grid && a.block == b.block && a.first == b.first && a.args == b.args;
}

uint64_t hash_of(const std::vector<HeldLaunch>& launches) {
  uint64_t h = kFnvOffsetBasis;
  for (const HeldLaunch& l : launches) {
    h = fnv1a64_word(h, uint64_t(reinterpret_cast<uintptr_t>(l.function)));
    h = fnv1a64_word(h, uint64_t(l.grid) << 32 | l.block);
    h = fnv1a64_word(h, uint64_t(l.first) << 32 | l.args);
  }
  return h;
}

bool args_differ(const HeldLaunch& l, const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  return std::memcmp(&a[l.first], &b[l.first], l.args * sizeof(uint64_t)) != 0;
}

// The node parameters of launch `l` with its arguments in `args` (`pointers` holds their
// addresses: the driver copies the values).
driver::CudaKernelNodeParams node_params(const HeldLaunch& l, std::vector<uint64_t>& args,
                                         std::vector<void*>& pointers) {
  pointers.resize(l.args);
  for (uint32_t i = 0; i < l.args; ++i) pointers[i] = &args[l.first + i];
  driver::CudaKernelNodeParams p;
  p.func = l.function;
  p.gridDimX = l.grid;
  p.blockDimX = l.block;
  p.kernelParams = pointers.data();
  return p;
}

void launch_each(driver::CUstream stream, const std::vector<HeldLaunch>& launches, const std::vector<uint64_t>& args) {
  std::vector<void*> pointers;
  for (const HeldLaunch& l : launches) {
    pointers.resize(l.args);
    for (uint32_t i = 0; i < l.args; ++i) pointers[i] = const_cast<uint64_t*>(&args[l.first + i]);
    KILN_CU(cuLaunchKernel, l.function, l.grid, 1, 1, l.block, 1, 1, 0, stream, pointers.data(), nullptr);
  }
}

void destroy(const driver::DriverApi& api, driver::CUgraphExec exec, driver::CUgraph graph) {
  if (exec) api.cuGraphExecDestroy(exec);
  if (graph) api.cuGraphDestroy(graph);
}

// A graph the driver refused is a lost optimization, not an error: said once, then the run's
// kernels are launched one by one.
void refused(const char* call, driver::CUresult result) {
  static std::once_flag once;
  std::call_once(once, [&] {
    log().warn("cuda: {}; recurring kernels are launched one by one", driver::error_text(call, result));
  });
}

}  // namespace

void GraphCache::launch(driver::CUstream stream, const std::vector<HeldLaunch>& launches,
                        const std::vector<uint64_t>& args) {
  if (launches.size() >= 2 && config().cuda_graphs && driver::graphs_supported(driver::api())) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Run* run = recurring(launches); run && replay(*run, stream, args)) return;
  }
  launch_each(stream, launches, args);
}

// The run of `launches` where it has been seen kRunsBeforeGraph times before and may be a graph;
// else null (counted).
GraphCache::Run* GraphCache::recurring(const std::vector<HeldLaunch>& launches) {
  const uint64_t h = hash_of(launches);
  auto it = runs_.find(h);
  if (it == runs_.end()) {
    if (runs_.size() >= kMostRuns)
      for (auto r = runs_.begin(); r != runs_.end();) r = r->second.graphs.empty() ? runs_.erase(r) : std::next(r);
    if (runs_.size() >= kMostRuns) return nullptr;
    it = runs_.emplace(h, Run{launches, 0, false, {}}).first;
  }
  Run& run = it->second;
  const auto& known = run.launches;
  if (known.size() != launches.size()) return nullptr;  // another run with the same hash
  for (size_t i = 0; i < known.size(); ++i)
    if (!same(known[i], launches[i])) return nullptr;
  return !run.failed && ++run.seen > kRunsBeforeGraph ? &run : nullptr;
}

// Launches `run` as a graph with arguments `args`: the graph of the run whose arguments differ in
// the fewest nodes, those nodes updated, or a new graph while the run has fewer than
// kGraphsPerRun and none matches. False where the driver refused (nothing launched).
bool GraphCache::replay(Run& run, driver::CUstream stream, const std::vector<uint64_t>& args) {
  const driver::DriverApi& api = driver::api();
  Graph* best = nullptr;
  size_t best_changed = 0;
  for (Graph& g : run.graphs) {
    size_t changed = 0;
    for (const HeldLaunch& l : run.launches) changed += args_differ(l, g.args, args);
    if (!best || changed < best_changed) best = &g, best_changed = changed;
  }
  if (!best || (best_changed > 0 && run.graphs.size() < kGraphsPerRun)) {
    if (!instantiate(run, args)) return false;
    best = &run.graphs.back();
  } else if (best_changed > 0) {
    std::vector<void*> pointers;
    std::vector<uint64_t>& next = best->args;
    for (size_t i = 0; i < run.launches.size(); ++i) {
      const HeldLaunch& l = run.launches[i];
      if (!args_differ(l, next, args)) continue;
      std::memcpy(&next[l.first], &args[l.first], l.args * sizeof(uint64_t));
      const driver::CudaKernelNodeParams p = node_params(l, next, pointers);
      if (driver::CUresult r = api.cuGraphExecKernelNodeSetParams(best->exec, best->nodes[i], &p);
          r != driver::CUDA_SUCCESS) {
        refused("cuGraphExecKernelNodeSetParams", r);
        destroy(api, best->exec, best->graph);
        run.graphs.erase(run.graphs.begin() + (best - run.graphs.data()));
        return false;
      }
      stats_add(&Stats::cuda_graph_nodes_updated, 1);
    }
  }
  KILN_CU(cuGraphLaunch, best->exec, stream);
  stats_add(&Stats::cuda_graph_launches, 1);
  return true;
}

// A new graph of `run`'s launches with arguments `args`, appended to run.graphs; false (the run
// marked failed) where the driver refused it.
bool GraphCache::instantiate(Run& run, const std::vector<uint64_t>& args) {
  const driver::DriverApi& api = driver::api();
  Graph g;
  g.args = args;
  driver::CUresult r = api.cuGraphCreate(&g.graph, 0);
  const char* call = "cuGraphCreate";
  std::vector<void*> pointers;
  for (size_t i = 0; r == driver::CUDA_SUCCESS && i < run.launches.size(); ++i) {
    const driver::CudaKernelNodeParams p = node_params(run.launches[i], g.args, pointers);
    driver::CUgraphNode node = nullptr;
    // Each node after the one before: the kernels' order on the stream.
    r = api.cuGraphAddKernelNode(&node, g.graph, i ? &g.nodes.back() : nullptr, i ? 1 : 0, &p);
    call = "cuGraphAddKernelNode";
    g.nodes.push_back(node);
  }
  if (r == driver::CUDA_SUCCESS) r = api.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), call = "cuGraphInstantiate";
  if (r != driver::CUDA_SUCCESS) {
    refused(call, r);
    destroy(api, g.exec, g.graph);
    run.failed = true;
    return false;
  }
  stats_add(&Stats::cuda_graphs_made, 1);
  run.graphs.push_back(std::move(g));
  return true;
}

}  // namespace kiln::codegen::cuda
