#include "codegen/halide/kernel_cache.h"

#include <HalideRuntime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>  // std::system
#include <filesystem>
#include <fstream>

#include "codegen/halide/compiler.h"
#include "runtime/config.h"
#include "runtime/hash.h"
#include "runtime/log.h"
#include "runtime/parallel.h"
#include "runtime/stats.h"
#include "runtime/version.h"

namespace kiln::codegen::halide {
namespace {

using fusion::Kernel;

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

// The kernels' parallel loops run on kiln's threads (runtime/parallel.h, oneTBB), which the BLAS pieces and
// the interpreter use too, not on the Halide runtime's own: its workers slept between kernels (a
// ~43 us wake-up on the VMs measured) and took a lock per task. The first failing task's code is
// the loop's result, as in Halide's pool.
using DoParFor = int (*)(void* user_context, halide_task_t task, int min, int size, uint8_t* closure);
int do_par_for_on_kiln_threads(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  struct Loop {
    halide_task_t task;
    void* user_context;
    int min;
    uint8_t* closure;
    std::atomic<int> result{0};
  } loop{task, user_context, min, closure};
  try {  // nothing may unwind through the kernel's frames
    parallel_for(
        size,
        [](void* ctx, int i) {
          auto& l = *static_cast<Loop*>(ctx);
          if (int r = l.task(l.user_context, l.min + i, l.closure)) {
            int none = 0;
            l.result.compare_exchange_strong(none, r);
          }
        },
        &loop);
  } catch (...) {
    return halide_error_code_generic_error;
  }
  return loop.result.load();
}

}  // namespace

std::string KernelCache::symbol_name(const std::string& key) {
  return "kiln_" + std::to_string(fnv1a64(key.data(), key.size()));
}

KernelFn KernelCache::load_or_build_or_null(const Kernel& k, const std::string& key, const std::string& schedule) {
  try {
    return load_or_build(k, key, schedule);
  } catch (const Error& e) {
    log().error("{}; running this kernel on the interpreter", e.what());
    stats_add(&Stats::kernels_failed, 1);
    return nullptr;
  }
}

double KernelCache::compile_seconds(const std::string& key) const {
  std::lock_guard<std::mutex> lock(compile_seconds_mutex_);
  auto it = compile_seconds_.find(key);
  return it == compile_seconds_.end() ? 0 : it->second;
}

KernelFn KernelCache::load_or_build(const Kernel& k, const std::string& key, const std::string& schedule) {
  const std::string name = symbol_name(key);
  if (auto path = cache().find(key, ".so")) {
    ensure_runtime();
    if (KernelFn fn = open(*path, name)) {
      stats_add(&Stats::kernels_loaded, 1);
      log().debug("loaded kernel {} from {}", name, *path);
      return fn;
    }
    log().warn("cache entry {} could not be loaded; rebuilding it", *path);
    std::filesystem::remove(*path);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string shared = cache().temp_path(".so");
  compile(k, schedule, name, shared);
  const std::string path = cache().store(key, ".so", shared);
  ensure_runtime();
  KernelFn fn = open(path, name);
  KILN_CHECK(fn, "halide: could not load the kernel just built at ", path, ": ", dlerror());
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  stats_add(&Stats::kernels_compiled, 1);
  stats_add(&Stats::compile_ms, ms);
  {
    std::lock_guard<std::mutex> lock(compile_seconds_mutex_);
    compile_seconds_[key] = double(ms) * 1e-3;
  }
  log().debug("compiled kernel {} in {} ms: {}", name, ms, key);
  return fn;
}

void KernelCache::compile(const Kernel& k, const std::string& schedule, const std::string& name,
                          const std::string& shared) {
  const std::string object = cache().temp_path(".o");
  const std::string& dump = config().dump_dir;
  if (!dump.empty()) std::filesystem::create_directories(dump);
  if (schedule.empty())
    compile_kernel_object(k, name, object, dump);
  else
    compile_kernel_object(k, schedule, name, object, dump);
  link(object, shared);
}

KernelFn KernelCache::build_candidate_at(const Kernel& k, const std::string& key, const std::string& schedule,
                                         const std::string& path) {
  compile(k, schedule, symbol_name(key), path);
  ensure_runtime();
  KernelFn fn = open(path, symbol_name(key));
  KILN_CHECK(fn, "halide: could not load the candidate kernel just built at ", path, ": ", dlerror());
  return fn;
}

KernelCache::Candidate KernelCache::build_candidate(const Kernel& k, const std::string& key,
                                                    const std::string& schedule, double compile_limit_s,
                                                    double run_limit_s) {
  if (const std::string helper = candidate_helper(); !helper.empty())
    return build_candidate_in_child(helper, k, key, schedule, compile_limit_s, run_limit_s);
  Candidate c;
  c.path = cache().temp_path(".so");
  const auto start = std::chrono::steady_clock::now();
  try {
    c.fn = build_candidate_at(k, key, schedule, c.path);
  } catch (const Error&) {
    std::filesystem::remove(c.path);
    throw;
  }
  c.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (c.compile_s > compile_limit_s) {
    std::filesystem::remove(c.path);
    throw Error(detail::concat("compiling took ", c.compile_s, " s, over the limit of ", compile_limit_s, " s"));
  }
  return c;
}

// By the linker itself: through the c++ driver a link took ~50 ms of a kernel's ~200 (start-up
// files and libraries a kernel does not need), ~15 ms so. The Halide runtime's symbols resolve
// when the kernel is loaded (ensure_runtime loads it first); a kernel calling libm (erf, log1p)
// names libm itself. KILN_CXX links through that C++ driver instead.
void KernelCache::link(const std::string& object, const std::string& shared) {
  const std::string& cxx = config().kernel_linker;
  const std::string cmd = (!cxx.empty() ? cxx + " -shared" : std::string("ld -shared --as-needed")) + " -o " +
                          shell_quote(shared) + " " + shell_quote(object) + " -lm 2>&1";
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove(object);
  KILN_CHECK(rc == 0, "halide: linking a kernel failed (", cmd, " exited with ", rc, ")");
}

KernelFn KernelCache::open(const std::string& path, const std::string& name) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return nullptr;
  return reinterpret_cast<KernelFn>(dlsym(handle, (name + "_argv").c_str()));
}

// Kernels are built without the Halide runtime; one shared copy is loaded before any of them,
// globally. Compiling threads call this too: the first builds it, the others wait for it.
void KernelCache::ensure_runtime() {
  std::lock_guard<std::mutex> lock(runtime_mutex_);
  if (runtime_ready_) return;
  if (load_runtime(prebuilt_runtime())) return;
  const std::string key = "halide-runtime";
  std::string path;
  if (auto found = cache().find(key, ".so")) {
    path = *found;
  } else {
    const std::string object = cache().temp_path(".o"), shared = cache().temp_path(".so");
    compile_runtime_object(object);
    link(object, shared);
    path = cache().store(key, ".so", shared);
  }
  KILN_CHECK(load_runtime(path), "halide: could not load its runtime from ", path, ": ", dlerror());
}
bool KernelCache::load_runtime(const std::string& path) {
  void* runtime = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!runtime) return false;
  auto set_do_par_for = reinterpret_cast<DoParFor (*)(DoParFor)>(dlsym(runtime, "halide_set_custom_do_par_for"));
  KILN_CHECK(set_do_par_for, "halide: its runtime at ", path, " has no halide_set_custom_do_par_for");
  set_do_par_for(&do_par_for_on_kiln_threads);
  runtime_ready_ = true;
  return true;
}
// The runtime built with kiln (CMake target kiln_halide_runtime), if it was built on this CPU
// (KILN_PREBUILT_RUNTIME=0 ignores it: the cache tests build one as another machine would).
std::string KernelCache::prebuilt_runtime() {
#ifdef KILN_PREBUILT_RUNTIME_DIR
  if (!config().prebuilt_halide_runtime) return "";
  const std::string dir = KILN_PREBUILT_RUNTIME_DIR;
  std::string cpu;
  if (std::ifstream(dir + "/cpu.txt") >> cpu && cpu == host_cpu_id() &&
      std::filesystem::exists(dir + "/libkiln_halide_runtime.so"))
    return dir + "/libkiln_halide_runtime.so";
#endif
  return "";
}
void KernelCache::ensure_runtime_or_log() {
  try {
    ensure_runtime();
  } catch (const Error& e) {
    log().error("{}", e.what());
  }
}

const DiskCache& KernelCache::cache() {
  static const DiskCache c("kiln-" + std::string(version()) + "-" + compiler_revision() + "-halide14-" + host_cpu_id());
  return c;
}

KernelCache& kernel_cache() {
  static KernelCache cache;
  return cache;
}

}  // namespace kiln::codegen::halide
