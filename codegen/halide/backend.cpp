// The Halide backend: finds each kernel's compiled code (in memory, else on disk, else compiles it:
// kernel_cache.h, at once or in the background: compile_queue.h) and launches it on the buffers of
// the flush (launcher.h); a kernel without compiled code runs unfused (codegen/unfused.h).
#include "codegen/halide/backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>

#include "codegen/halide/compile_queue.h"
#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/launcher.h"
#include "codegen/halide/specialize.h"
#include "codegen/halide/tune.h"
#include "codegen/unfused.h"
#include "runtime/config.h"
#include "runtime/log.h"
#include "runtime/parallel.h"
#include "runtime/stats.h"

namespace kiln::codegen {
namespace {

using fusion::Kernel;
using halide::KernelFn;

class HalideBackend final : public Backend {
 public:
  const char* name() const override { return "halide"; }

  void run(const fusion::Partition& partition) override {
    std::vector<bool> general(partition.kernels.size(), false);
    std::vector<KernelFn> fns = prepare(partition, general);
    halide::use_tuned_kernels(partition, fns);
    bool unfused = false;
    for (size_t i = 0; i < partition.kernels.size(); ++i) {
      const Kernel& k = partition.kernels[i];
      if (halide::tuning()) halide::tune_before_launch(k, partition.keys[i], fns[i]);
      unfused |= !fns[i] && k.kind != Kernel::Kind::Library;
      if (general[i]) {  // the general kernel at sizes that specialize it: timed for the rule
        const auto start = std::chrono::steady_clock::now();
        run(k, fns[i]);
        halide::general_ran(
            k, partition.keys[i],
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      } else {
        run(k, fns[i]);
      }
      for (ir::Node* done : partition.release[i]) done->result.reset();
    }
    if (unfused) stats_add(&Stats::flushes_unfused, 1);
  }

 private:
  // `fn` is the kernel's compiled function (see prepare); without one it runs unfused.
  void run(const Kernel& k, KernelFn fn) {
    if (k.kind == Kernel::Kind::Library) {
      const bool trace = log().should_log(spdlog::level::trace);
      const auto start = trace ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      run_node(*k.library_node);
      if (trace)
        log().trace("library {:.1f} us {} {}",
                    std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count(),
                    ir::op_name(k.library_node->op), detail::concat(k.library_node->shape));
      stats_add(&Stats::kernel_launches, 1);
      return;
    }
    if (!fn) return run_unfused(k);
    halide::launch(k, fn);
  }

  // Halide indexes with int32: larger tensors run unfused.
  static bool fits_int32(const Kernel& k) {
    if (numel_of(k.domain) > INT32_MAX) return false;
    for (const auto& r : k.reads)
      if (r.node->numel() > INT32_MAX) return false;
    return true;
  }

  // Each kernel's function (null for a library call, a kernel too large for 32-bit indices, one
  // that failed to build or is compiling in the background, and every kernel of eager mode: see
  // run), after loading or compiling at once the kernels of the flush
  // not yet in memory: a first step compiles some thirty kernels, each mostly on one thread (Halide
  // and LLVM, then the linker), and Halide compiles distinct pipelines concurrently. As many
  // threads as kernels run on (set_num_threads). Each key is looked up once per flush.
  // `general` marks the kernels served by their general kernel (halide/specialize.h).
  std::vector<KernelFn> prepare(const fusion::Partition& partition, std::vector<bool>& general) {
    halide::KernelCache& cache = halide::kernel_cache();
    const std::vector<Kernel>& kernels = partition.kernels;
    std::vector<KernelFn> fns(kernels.size(), nullptr);
    if (!is_lazy()) return fns;  // eager mode runs the per-op kernels, never a compiler
    std::vector<std::pair<const Kernel*, const std::string*>> missing;
    std::vector<std::pair<size_t, size_t>> waiting;  // (kernel, its entry in missing)
    const bool background = config().compile_in_background;
    halide::compile_queue().take_built();  // specialized kernels compile in the background in either mode
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Kernel& k = kernels[i];
      if (k.kind == Kernel::Kind::Library || !fits_int32(k)) continue;
      const std::string& key = partition.keys[i];
      if (const KernelFn* fn = cache.in_memory(key)) {
        stats_add(&Stats::kernel_cache_hits, 1);
        fns[i] = *fn;
        continue;
      }
      const bool specialized = halide::size_specialized(k);
      const bool on_disk = (background || specialized) && cache.on_disk(key);
      if (specialized && !on_disk)
        if ((fns[i] = halide::general_for(k, key))) {
          general[i] = true;
          continue;
        }
      if (background && !on_disk) {
        if (halide::compile_queue().submit(k, key)) continue;  // unfused (null) until built
        fns[i] = *cache.in_memory(key);
        continue;
      }
      size_t m = 0;
      while (m < missing.size() && *missing[m].second != key) ++m;
      if (m == missing.size())
        missing.emplace_back(&k, &key);
      else
        stats_add(&Stats::kernel_cache_hits, 1);  // built once for this flush, then found
      waiting.emplace_back(i, m);
    }
    if (missing.empty()) return fns;
    const size_t workers = std::min<size_t>(missing.size(), std::max(1, get_num_threads()));
    log().debug("loading or compiling {} kernels on {} threads", missing.size(), workers);
    // With an empty cache the shared Halide runtime is built too: as the first job, beside the
    // kernels (they need it only to be loaded, and wait for it there).
    const size_t first = cache.runtime_ready() ? 1 : 0;
    std::vector<KernelFn> built(missing.size(), nullptr);
    std::atomic<size_t> next{first};
    // `workers` ranges, each taking the next job until none is left: jobs differ in length.
    parallel_for_ranges(int64_t(workers), 1, [&](int64_t, int64_t) {
      for (size_t i; (i = next.fetch_add(1)) < missing.size() + 1;) {
        if (i == 0)
          cache.ensure_runtime_or_log();
        else
          built[i - 1] = cache.load_or_build_or_null(*missing[i - 1].first, *missing[i - 1].second);
      }
    });
    for (size_t m = 0; m < missing.size(); ++m) cache.remember(*missing[m].second, built[m]);
    for (auto [i, m] : waiting) fns[i] = built[m];
    return fns;
  }
};

}  // namespace

Backend& halide_backend() {
  static HalideBackend backend;
  return backend;
}

}  // namespace kiln::codegen
