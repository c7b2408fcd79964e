// CUDA graphs for the kernels a training loop launches every step (DESIGN.md: "a recurring
// segment can be one CUDA graph"), so that a step's kernels cost the host one launch.
//
// The launcher holds a flush's kernel launches back while nothing else goes on the stream between
// them: a run ends where a copy, a cuBLAS call, a per-op kernel, a kernel run on the host, a host
// read or the flush's end comes, and is handed here. A run is known by its launches' functions,
// grid and block sizes and argument counts, never by the arguments' values. Until it has been
// seen kRunsBeforeGraph times its kernels are launched one by one; then it is built into a graph
// of kernel nodes, each after the one before (explicitly, not by stream capture: the launcher
// knows every node and its arguments, and a node's handle is what an update needs), instantiated
// and launched with one cuGraphLaunch. Later occurrences relaunch it, first setting the arguments
// of the nodes whose arguments differ from the ones it holds: device pointers that the caching
// allocator handed out elsewhere this time, sizes, scalars such as a learning rate. A run keeps up
// to kGraphsPerRun instantiated graphs and a replay takes the one that differs least, so a loop
// whose buffers alternate between two sets of addresses updates nothing.
//
// cuBLAS's GEMMs end a run (their kernels' arguments are cuBLAS's own), so a training step with
// matmuls is a graph per stretch of fused kernels between them.
#pragma once
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/cuda/driver.h"

namespace kiln::codegen::cuda {

inline constexpr int kRunsBeforeGraph = 2;
inline constexpr size_t kGraphsPerRun = 2;

// One launch held back: its kernel's arguments are `args` 8-byte words (every kiln kernel's
// parameters are pointers, long long or double) of the run's argument array, from `first` on.
struct HeldLaunch {
  cuda_driver::CUfunction function = nullptr;
  uint32_t grid = 0, block = 0;
  uint32_t first = 0, args = 0;
};

// One device's graphs. Never destroyed (its device's state lives as long as the process).
class GraphCache {
 public:
  // Queues `launches` (arguments in `args`) on `stream`: one graph launch where runs may be graphs
  // (config().cuda_graphs, a driver with graphs) and this one recurs, else kernel by kernel.
  void launch(cuda_driver::CUstream stream, const std::vector<HeldLaunch>& launches, const std::vector<uint64_t>& args);

 private:
  struct Graph {
    cuda_driver::CUgraph graph = nullptr;  // kept: its nodes name the instantiated graph's nodes
    cuda_driver::CUgraphExec exec = nullptr;
    std::vector<cuda_driver::CUgraphNode> nodes;  // one per launch
    std::vector<uint64_t> args;                   // the arguments its nodes hold
  };
  struct Run {
    std::vector<HeldLaunch> launches;
    int64_t seen = 0;
    bool failed = false;  // the driver refused its graph: launched kernel by kernel
    std::vector<Graph> graphs;
  };
  bool instantiate(Run& run, const std::vector<uint64_t>& args);
  Run* recurring(const std::vector<HeldLaunch>& launches);
  bool replay(Run& run, cuda_driver::CUstream stream, const std::vector<uint64_t>& args);

  std::mutex mutex_;
  std::unordered_map<uint64_t, Run> runs_;  // by the hash of their launches
};

}  // namespace kiln::codegen::cuda
