// Compiled CUDA kernels by key: in this process's memory, else in the disk cache beside the CPU
// kernels (a folder per kiln version, CUDA code generator version, NVRTC version and
// architecture; each entry's key also names NVRTC's options), else generated (source.h),
// compiled by NVRTC and stored there. A damaged entry is logged and rebuilt (runtime/disk_cache.h);
// an unwritable cache folder only costs the compiles. KILN_DUMP names a folder that receives each
// compiled kernel's .cu source. Safe to call from several threads: kernels compile in parallel.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "codegen/cuda/source.h"

namespace kiln {
class DiskCache;
}

namespace kiln::codegen::cuda {

// Bumped whenever generated sources change for the same key, so that old cubins are not reused.
constexpr int kGeneratorVersion = 1;

struct CompiledKernel {
  std::string key;        // cuda_key
  std::string name;       // the __global__ function
  std::string init_name;  // a library kernel's first launch, where it has two (KernelSource)
  std::string image;      // a cubin, or PTX when ptx_only
  bool ptx_only = false;
  Layout layout = Layout::Pointwise;
};

class KernelCache {
 public:
  // Kernels for `sm_<arch>` (e.g. 90).
  explicit KernelCache(int arch);
  ~KernelCache();

  // The compiled kernel for `k` with the given index width. Throws kiln::Error when NVRTC is
  // unavailable or fails (with the key and NVRTC's log).
  std::shared_ptr<const CompiledKernel> get(const fusion::Kernel& k, bool index32);
  // The same for a source already generated (kernel_source, or a per-op module: per_op.h).
  std::shared_ptr<const CompiledKernel> get(const KernelSource& source);
  // The compiled kernel from memory or disk; null where it would have to be compiled.
  std::shared_ptr<const CompiledKernel> find(const KernelSource& source);

  int arch() const { return arch_; }
  // The entry key on disk for a cuda_key: it also names NVRTC's options.
  static std::string disk_key(const std::string& key);
  const DiskCache& disk() const;

  struct Counts {
    int64_t compiled = 0, loaded = 0, in_memory = 0;
  };
  Counts counts() const;

 private:
  std::shared_ptr<const CompiledKernel> load(const KernelSource& source);
  std::shared_ptr<const CompiledKernel> compile(const KernelSource& source);

  const int arch_;
  std::unique_ptr<DiskCache> disk_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>> loaded_;
  Counts counts_;
};

// The process's cache for `sm_<arch>`.
KernelCache& kernel_cache(int arch);

}  // namespace kiln::codegen::cuda
