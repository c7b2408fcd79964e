#include "codegen/halide/specialize.h"

#include <mutex>
#include <unordered_map>

#include "codegen/halide/compile_queue.h"
#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/tune_db.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/stats.h"

namespace kiln::codegen::halide {
namespace {

using fusion::Kernel;

// One size-specialized kernel in one size bucket, served by its general kernel.
struct Serving {
  std::string general_key;
  KernelFn general = nullptr;                                                       // null until it is found built
  enum class Decision { Unknown, Specialize, Leave } decision = Decision::Unknown;  // the tuning database's
  double general_us = 0;                                                            // its runs at these sizes
  bool submitted = false;  // the specialized kernel was sent to the background compiler
};

std::mutex g_mutex;
std::unordered_map<std::string, Serving> g_serving;  // by specialized key and size bucket

Serving& serving(const Kernel& k, const std::string& key) {
  const std::string bucket = size_bucket(k);
  auto [it, added] = g_serving.try_emplace(key + "\n" + bucket);
  Serving& s = it->second;
  if (added) {
    s.general_key = general_kernel(k).key();
    if (config().use_tuned)
      if (auto record = tuning_db().find(key, bucket))
        // "hand": the specialized kernel pays. A tuned schedule for it serves from the database
        // (use_tuned_kernels) with nothing to compile; "general": it does not pay.
        s.decision = record->schedule == "hand" ? Serving::Decision::Specialize : Serving::Decision::Leave;
  }
  return s;
}

void specialize(const Kernel& k, const std::string& key, Serving& s, const char* why) {
  s.submitted = true;
  stats_add(&Stats::kernels_specialized, 1);
  log().debug("compiling the size-specialized kernel in the background ({}): {}", why, key);
  compile_queue().submit(k, key);
}

}  // namespace

bool size_specialized(const Kernel& k) { return k.narrow_rows() || k.tiny_inner(); }

Kernel general_kernel(const Kernel& k) {
  Kernel g = k;
  g.specialize_sizes = false;
  return g;
}

KernelFn general_for(const Kernel& k, const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Serving& s = serving(k, key);
  if (!s.general) {
    KernelCache& cache = kernel_cache();
    if (const KernelFn* fn = cache.in_memory(s.general_key)) {
      s.general = *fn;
    } else if (cache.on_disk(s.general_key)) {
      s.general = cache.load_or_build_or_null(general_kernel(k), s.general_key);
      cache.remember(s.general_key, s.general);
    }
  }
  if (!s.general) return nullptr;
  if (s.decision == Serving::Decision::Specialize && !s.submitted) specialize(k, key, s, "the tuning database says so");
  stats_add(&Stats::kernels_served_general, 1);
  return s.general;
}

void general_ran(const Kernel& k, const std::string& key, double us) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Serving& s = serving(k, key);
  s.general_us += us;
  if (s.decision == Serving::Decision::Unknown && !s.submitted && s.general_us >= config().specialize_after_ms * 1e3)
    specialize(k, key, s, "the general kernel ran as long as a compile takes");
}

}  // namespace kiln::codegen::halide
