// What a flush costs, piece by piece, on a segment of 1000 dependent elementwise ops on 8 floats
// (the overhead-bound case; tracing itself is perf/bench_trace): ordering the segment into a plan,
// partitioning it the first time and looking the partition up every later time (the segment-plan
// cache), a whole flush of one tiny kernel, and the host allocator. kiln only: these are kiln's
// internals, with no libtorch counterpart.
#include <benchmark/benchmark.h>
#include <kiln/torch.h>

#include <cstdlib>

#include "frontend/trace.h"
#include "fusion/partition_cache.h"
#include "fusion/passes.h"
#include "perf/bench_common.h"
#include "runtime/buffer.h"
#include "tracer/storage.h"

namespace {

constexpr int kOps = 1000;

// A pending segment of kOps ops and the plan a flush would make of it (after CSE and
// simplification), left unexecuted.
struct PendingSegment {
  torch::Tensor y;
  kiln::fusion::Plan plan;
  PendingSegment() {
    auto x = torch::randn({8});  // data, not a constant: constants would fold into one
    kiln::sync();
    y = x;
    for (int i = 0; i < kOps / 2; ++i) y = y * 1.0001 + 0.5;
    plan = kiln::fusion::make_plan({kiln::detail::operand(y).node});
    kiln::fusion::eliminate_common_subexpressions(plan);
    kiln::fusion::simplify(plan);
  }
};

void per_node(benchmark::State& state, size_t nodes) {
  state.counters["nodes"] = double(nodes);
  state.counters["per_node_ns"] = benchmark::Counter(
      double(nodes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

// Ordering as a flush does it: one walk back over the nodes the thread recorded.
static void BM_MakePlan(benchmark::State& state) {
  PendingSegment s;
  const kiln::ir::RecordedNodes& recorded = kiln::tracer::recorded_nodes();
  for (auto _ : state) benchmark::DoNotOptimize(kiln::fusion::make_plan({kiln::detail::operand(s.y).node}, &recorded));
  per_node(state, s.plan.steps.size());
}
BENCHMARK(BM_MakePlan);

// Ordering by a search from the roots, as a flush does when a node comes from another thread.
static void BM_MakePlanBySearch(benchmark::State& state) {
  PendingSegment s;
  for (auto _ : state) benchmark::DoNotOptimize(kiln::fusion::make_plan({kiln::detail::operand(s.y).node}));
  per_node(state, s.plan.steps.size());
}
BENCHMARK(BM_MakePlanBySearch);

static void BM_Partition(benchmark::State& state) {  // what a flush of a new structure pays
  PendingSegment s;
  std::vector<std::vector<kiln::ir::Node*>> release;
  for (auto _ : state) benchmark::DoNotOptimize(kiln::fusion::partition(s.plan, &release));
  per_node(state, s.plan.steps.size());
}
BENCHMARK(BM_Partition);

static void BM_PartitionLookup(benchmark::State& state) {  // what every later flush pays instead
  PendingSegment s;
  kiln::fusion::partition_cached(s.plan);
  for (auto _ : state) benchmark::DoNotOptimize(&kiln::fusion::partition_cached(s.plan));
  per_node(state, s.plan.steps.size());
}
BENCHMARK(BM_PartitionLookup);

// Trace one op, flush, launch its (cached) kernel, read nothing back: the floor of a step.
static void BM_FlushOneTinyKernel(benchmark::State& state) {
  auto x = torch::ones({8});
  kiln::sync();
  auto step = [&] {
    auto y = x * 2.0;
    kiln::sync();
    benchmark::DoNotOptimize(y);
  };
  step();  // compiles or loads the kernel
  for (auto _ : state) step();
}
BENCHMARK(BM_FlushOneTinyKernel);

// The host allocator's round trip for a 1 MiB buffer (kept and reused after the first), against
// malloc and free of the same size.
static void BM_AllocatorBuffer(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(kiln::make_buffer(size_t(1) << 20));
}
BENCHMARK(BM_AllocatorBuffer);
static void BM_AllocatorMalloc(benchmark::State& state) {
  for (auto _ : state) {
    void* p = std::malloc(size_t(1) << 20);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_AllocatorMalloc);

static WaitForCompilers wait_for_compilers;

BENCHMARK_MAIN();
