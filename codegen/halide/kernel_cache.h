// Compiled kernels by structural key: in this process's memory, else in the disk cache (one folder
// per kiln version, compiler module build and CPU), else compiled by the module (compiler.h),
// linked and stored there. Kernels are linked without the Halide runtime: one shared copy, loaded
// globally before any of them, serves them all, its parallel loops running on kiln's threads.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codegen/halide/launcher.h"
#include "runtime/disk_cache.h"

namespace kiln::codegen::halide {

class KernelCache {
 public:
  // The function kept in memory for `key` (null: it could not be built), or null if none is.
  const KernelFn* in_memory(const std::string& key) const {
    auto it = loaded_.find(key);
    return it == loaded_.end() ? nullptr : &it->second;
  }
  void remember(const std::string& key, KernelFn fn) { loaded_[key] = fn; }
  bool on_disk(const std::string& key) { return cache().find(key, ".so").has_value(); }

  // Loads the kernel from disk, else builds and stores it (on any thread). A kernel that cannot
  // be built is logged and gives null: it runs on the interpreter. `schedule` (ScheduleChoice::text(),
  // schedule_params.h) builds a tuned kernel; its key must say so (tune.h).
  KernelFn load_or_build_or_null(const fusion::Kernel& k, const std::string& key, const std::string& schedule = "");

  // A tuning candidate: `k` built with `schedule` into a temporary file (`path`), not the cache,
  // and loaded; its symbol is the one `key` names, so that store_candidate can keep it. Throws
  // kiln::Error. It compiles in a child process (tools/compile_candidate.cpp) that also runs it
  // once on random inputs of k's sizes, killed when compiling takes over `compile_limit_s` or that
  // run over `run_limit_s`: a compile cannot be interrupted in this process, and a thread left
  // behind would keep a core busy and the kernel's nodes alive. Without the helper program (an
  // installation lacking it) it compiles here and only a compile over the limit is refused.
  struct Candidate {
    KernelFn fn = nullptr;
    std::string path;
    double compile_s = 0, first_run_us = 0;  // as the child measured them (first_run_us 0: not run)
  };
  Candidate build_candidate(const fusion::Kernel& k, const std::string& key, const std::string& schedule,
                            double compile_limit_s, double run_limit_s);
  // The child's side: builds `k` with `schedule` into `path` (symbol as `key` names) and loads it.
  KernelFn build_candidate_at(const fusion::Kernel& k, const std::string& key, const std::string& schedule,
                              const std::string& path);
  // Moves a candidate's file into the disk cache as the entry for `key`.
  void store_candidate(const std::string& key, const Candidate& c) { cache().store(key, ".so", c.path); }

  // How long compiling `key` took in this process (seconds; 0 if it was not compiled here).
  double compile_seconds(const std::string& key) const;

  bool runtime_ready() const { return runtime_ready_; }
  // Loads the shared runtime, building it first into the disk cache if need be. In the compiling
  // pool: a failure is logged and left for the kernels to report (they load it too).
  void ensure_runtime_or_log();

 private:
  static std::string candidate_helper();  // the child's program, "" when there is none
  static std::string symbol_name(const std::string& key);
  Candidate build_candidate_in_child(const std::string& helper, const fusion::Kernel& k, const std::string& key,
                                     const std::string& schedule, double compile_limit_s, double run_limit_s);
  KernelFn load_or_build(const fusion::Kernel& k, const std::string& key, const std::string& schedule);
  void compile(const fusion::Kernel& k, const std::string& schedule, const std::string& name,
               const std::string& shared);
  static void link(const std::string& object, const std::string& shared);
  static KernelFn open(const std::string& path, const std::string& name);
  void ensure_runtime();
  bool load_runtime(const std::string& path);
  static std::string prebuilt_runtime();
  const DiskCache& cache();

  std::unordered_map<std::string, KernelFn> loaded_;  // the flushing thread's alone
  std::mutex runtime_mutex_;
  mutable std::mutex compile_seconds_mutex_;
  std::unordered_map<std::string, double> compile_seconds_;
  std::atomic<bool> runtime_ready_{false};
};

KernelCache& kernel_cache();

}  // namespace kiln::codegen::halide
