#include "codegen/cuda/kernel_cache.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "codegen/cuda/nvrtc.h"
#include "runtime/config.h"
#include "runtime/disk_cache.h"
#include "runtime/log.h"
#include "runtime/version.h"

namespace kiln::codegen::cuda {
namespace {

std::optional<std::string> read_whole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  if (!f && !f.eof()) return std::nullopt;
  return s.str();
}

bool write_whole(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), std::streamsize(data.size()));
  return bool(f);
}

}  // namespace

KernelCache::KernelCache(int arch)
    : arch_(arch),
      disk_(std::make_unique<DiskCache>("kiln-" + std::string(version()) + "-cuda" + std::to_string(kGeneratorVersion) +
                                        "-nvrtc" + nvrtc_version() + "-sm_" + std::to_string(arch))) {}

KernelCache::~KernelCache() = default;

const DiskCache& KernelCache::disk() const { return *disk_; }

std::string KernelCache::disk_key(const std::string& key) {
  std::string options;
  for (const auto& o : nvrtc_options()) options += o + " ";
  return options + "|" + key;
}

KernelCache::Counts KernelCache::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::shared_ptr<const CompiledKernel> KernelCache::get(const fusion::Kernel& k, bool index32) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(cuda_key(k, index32));
    if (it != loaded_.end()) {
      ++counts_.in_memory;
      return it->second;
    }
  }
  return get(kernel_source(k, index32));
}

std::shared_ptr<const CompiledKernel> KernelCache::find(const KernelSource& source) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(source.key);
    if (it != loaded_.end()) {
      ++counts_.in_memory;
      return it->second;
    }
  }
  auto loaded = load(source);
  if (!loaded) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.emplace(source.key, std::move(loaded)).first->second;
}

std::shared_ptr<const CompiledKernel> KernelCache::get(const KernelSource& source) {
  if (auto found = find(source)) return found;
  // Compiled outside the lock, so that kernels compile in parallel; two threads asking for the
  // same new key both compile it, and the first one stored is kept.
  auto compiled = compile(source);
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_.emplace(source.key, std::move(compiled)).first->second;
}

namespace {
std::shared_ptr<CompiledKernel> described(const KernelSource& source) {
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->key = source.key;
  kernel->name = source.name;
  kernel->init_name = source.init_name;
  kernel->layout = source.layout;
  return kernel;
}
}  // namespace

std::shared_ptr<const CompiledKernel> KernelCache::load(const KernelSource& source) {
  const std::string entry = disk_key(source.key);
  for (const char* ext : {".cubin", ".ptx"}) {
    auto path = disk_->find(entry, ext);
    if (!path) continue;
    if (auto image = read_whole(*path)) {
      auto kernel = described(source);
      kernel->image = std::move(*image);
      kernel->ptx_only = std::string(ext) == ".ptx";
      std::lock_guard<std::mutex> lock(mutex_);
      ++counts_.loaded;
      return kernel;
    }
    log().warn("cuda: cache entry {} could not be read; rebuilding it", *path);
  }
  return nullptr;
}

std::shared_ptr<const CompiledKernel> KernelCache::compile(const KernelSource& source) {
  auto kernel = described(source);
  const std::string entry = disk_key(source.key);
  const std::string& dump = config().dump_dir;
  if (!dump.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dump, ec);
    if (!write_whole(dump + "/" + source.name + ".cu", source.source))
      log().warn("cuda: could not write {}/{}.cu (KILN_DUMP)", dump, source.name);
  }
  const auto start = std::chrono::steady_clock::now();
  CompiledCuda compiled = nvrtc_compile(source.source, source.name + ".cu", arch_, source.key);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  log().debug("cuda: compiled kernel {} for {} in {} ms: {}", source.name, compiled.arch, ms, source.key);
  kernel->image = std::move(compiled.image);
  kernel->ptx_only = compiled.ptx_only;
  const std::string ext = kernel->ptx_only ? ".ptx" : ".cubin";
  const std::string temp = disk_->temp_path(ext);
  std::error_code ec;
  if (!write_whole(temp, kernel->image))
    log().warn("cuda: could not write {} for the kernel cache", temp);
  else if (disk_->store(entry, ext, temp) == temp)  // the cache folder is not writable
    std::filesystem::remove(temp, ec);
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.compiled;
  return kernel;
}

KernelCache& kernel_cache(int arch) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<KernelCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  auto& c = caches[arch];
  if (!c) c = std::make_unique<KernelCache>(arch);
  return *c;
}

}  // namespace kiln::codegen::cuda
