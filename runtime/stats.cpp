#include "runtime/stats.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace kiln {
namespace {

// One counter per field, laid out like Stats so that a member pointer indexes both.
constexpr int kFields = sizeof(Stats) / sizeof(int64_t);
int field_index(int64_t Stats::*field) {
  static const Stats probe{};
  return int(&(probe.*field) - reinterpret_cast<const int64_t*>(&probe));
}

// Each thread counts in its own block with a plain load and store: a locked add per traced op
// was 4% of tracing. stats() sums the live blocks and what exited threads left (`retired`);
// reset_stats() moves the baseline instead of writing into other threads' blocks.
struct Counters {
  std::atomic<int64_t> v[kFields] = {};
};
struct Totals {
  std::mutex mutex;
  std::vector<const Counters*> live;
  std::atomic<int64_t> retired[kFields] = {};
  int64_t baseline[kFields] = {};
};
Totals& totals() {
  static Totals* t = new Totals;  // never destroyed: threads may exit after static destruction
  return *t;
}

struct ThreadCounters {
  Counters c;
  ThreadCounters() {
    std::lock_guard<std::mutex> lock(totals().mutex);
    totals().live.push_back(&c);
  }
  ~ThreadCounters();
};
thread_local ThreadCounters t_counters;
// Set once this thread's block is gone (thread exit): later counts go to `retired` directly. A
// plain bool has no destructor, so it can be read at any point of the exit.
thread_local bool t_counters_gone = false;

ThreadCounters::~ThreadCounters() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (int i = 0; i < kFields; ++i) t.retired[i].fetch_add(c.v[i].load(std::memory_order_relaxed));
  t.live.erase(std::find(t.live.begin(), t.live.end(), &c));
  t_counters_gone = true;
}

// Every count so far, reset or not; called under the mutex.
void sum_all(int64_t out[kFields]) {
  Totals& t = totals();
  for (int i = 0; i < kFields; ++i) out[i] = t.retired[i].load(std::memory_order_relaxed);
  for (const Counters* c : t.live)
    for (int i = 0; i < kFields; ++i) out[i] += c->v[i].load(std::memory_order_relaxed);
}

}  // namespace

void stats_add(int64_t Stats::*field, int64_t n) {
  const int i = field_index(field);
  if (t_counters_gone) {
    totals().retired[i].fetch_add(n, std::memory_order_relaxed);
    return;
  }
  std::atomic<int64_t>& c = t_counters.c.v[i];  // only this thread writes it
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

Stats stats() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  Stats s;
  auto* out = reinterpret_cast<int64_t*>(&s);
  sum_all(out);
  for (int i = 0; i < kFields; ++i) out[i] -= t.baseline[i];
  return s;
}

void reset_stats() {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  sum_all(t.baseline);
}

std::ostream& operator<<(std::ostream& os, const Stats& s) {
  return os << "ops_traced=" << s.ops_traced << " flushes=" << s.flushes << " nodes_executed=" << s.nodes_executed
            << " kernel_launches=" << s.kernel_launches << " kernels_compiled=" << s.kernels_compiled
            << " kernels_loaded=" << s.kernels_loaded << " kernel_cache_hits=" << s.kernel_cache_hits
            << " compile_ms=" << s.compile_ms << " kernels_failed=" << s.kernels_failed
            << " kernels_unfused=" << s.kernels_unfused << " flushes_unfused=" << s.flushes_unfused
            << " nodes_interpreted=" << s.nodes_interpreted << " allocator_mallocs=" << s.allocator_mallocs
            << " allocator_hits=" << s.allocator_hits << " cuda_host_fallbacks=" << s.cuda_host_fallbacks
            << " kernels_tuned_used=" << s.kernels_tuned_used << " kernels_tuned=" << s.kernels_tuned
            << " kernels_served_general=" << s.kernels_served_general
            << " kernels_specialized=" << s.kernels_specialized << " native_kernels=" << s.native_kernels
            << " cuda_graph_launches=" << s.cuda_graph_launches << " cuda_graphs_made=" << s.cuda_graphs_made
            << " cuda_graph_nodes_updated=" << s.cuda_graph_nodes_updated;
}

}  // namespace kiln
