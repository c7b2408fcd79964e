#include "runtime/stats.h"

#include <atomic>

namespace kiln {
namespace {
// One atomic per field, laid out like Stats so that a member pointer indexes both.
constexpr int kFields = sizeof(Stats) / sizeof(int64_t);
std::atomic<int64_t> g_counters[kFields];
int field_index(int64_t Stats::*field) {
  static const Stats probe{};
  return int(&(probe.*field) - reinterpret_cast<const int64_t*>(&probe));
}
}  // namespace

void stats_add(int64_t Stats::*field, int64_t n) {
  g_counters[field_index(field)].fetch_add(n, std::memory_order_relaxed);
}

Stats stats() {
  Stats s;
  auto* out = reinterpret_cast<int64_t*>(&s);
  for (int i = 0; i < kFields; ++i) out[i] = g_counters[i].load(std::memory_order_relaxed);
  return s;
}

void reset_stats() {
  for (auto& c : g_counters) c.store(0, std::memory_order_relaxed);
}

std::ostream& operator<<(std::ostream& os, const Stats& s) {
  return os << "ops_traced=" << s.ops_traced << " flushes=" << s.flushes
            << " nodes_executed=" << s.nodes_executed << " kernel_launches=" << s.kernel_launches
            << " kernels_compiled=" << s.kernels_compiled << " kernels_loaded=" << s.kernels_loaded
            << " kernel_cache_hits=" << s.kernel_cache_hits << " compile_ms=" << s.compile_ms
            << " allocator_mallocs=" << s.allocator_mallocs
            << " allocator_hits=" << s.allocator_hits;
}

}  // namespace kiln
