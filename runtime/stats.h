// Process-wide counters: what was traced, flushed, launched and compiled.
#pragma once
#include <atomic>
#include <cstdint>
#include <ostream>

namespace kiln {

struct Stats {
  int64_t ops_traced = 0;         // IR nodes recorded
  int64_t flushes = 0;            // segments turned into buffers
  int64_t nodes_executed = 0;     // IR nodes computed by flushes
  int64_t kernel_launches = 0;    // kernels run (the interpreter runs one per node)
  int64_t kernels_compiled = 0;   // kernels built in this process
  int64_t kernels_loaded = 0;     // kernels taken from the disk cache
  int64_t kernel_cache_hits = 0;  // launches whose kernel was already loaded in this process
  int64_t compile_ms = 0;         // time spent building kernels
  int64_t kernels_failed = 0;     // kernels a backend could not build, run unfused instead
  // Kernels run node by node on the per-op kernels compiled with kiln (codegen/unfused.h): their
  // fused kernel was not built yet (KILN_COMPILE=background) or eager mode ran them; the flushes
  // (steps) that ran any; and the nodes of those kernels left to the interpreter (no per-op kernel).
  int64_t kernels_unfused = 0;
  int64_t flushes_unfused = 0;
  int64_t nodes_interpreted = 0;
  int64_t allocator_mallocs = 0;
  int64_t allocator_hits = 0;
  int64_t cuda_host_fallbacks = 0;  // CUDA kernels run on the host (no CUDA source yet), copied both ways
  int64_t kernels_tuned_used = 0;   // kernels a flush ran with a tuned schedule (tuning database)
  int64_t kernels_tuned = 0;        // kernels `kiln tune` measured in this process
  // Launches at sizes that specialize a kernel (pooling windows, rows of 8 or fewer) run by the
  // general kernel, theirs not built; and specialized kernels sent to be compiled in the background
  // because they pay (codegen/halide/specialize.h).
  int64_t kernels_served_general = 0;
  int64_t kernels_specialized = 0;
  // Eager mode's whole-op kernels (codegen/native_kernels.h: layer norm, softmax, cross-entropy,
  // optimizer updates, forward or backward), each also one of kernel_launches.
  int64_t native_kernels = 0;
  // CUDA graphs (codegen/cuda/graphs.h): graph launches, each running a recurring run of kernels
  // (which kernel_launches counts one by one); graphs instantiated; kernel nodes whose arguments
  // a replay updated.
  int64_t cuda_graph_launches = 0;
  int64_t cuda_graphs_made = 0;
  int64_t cuda_graph_nodes_updated = 0;
};
std::ostream& operator<<(std::ostream& os, const Stats& s);

Stats stats();
void reset_stats();
void stats_add(int64_t Stats::*field, int64_t n);

}  // namespace kiln
