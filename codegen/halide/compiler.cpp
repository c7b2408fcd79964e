#include "codegen/halide/compiler.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/disk_cache.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace kiln::codegen::halide {
namespace {

// Where the module is looked for: KILN_HALIDE_COMPILER, the build tree, the installed library.
std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("KILN_HALIDE_COMPILER")) paths.emplace_back(env);
#ifdef KILN_HALIDE_COMPILER_BUILD_PATH
  paths.emplace_back(KILN_HALIDE_COMPILER_BUILD_PATH);
#endif
#ifdef KILN_HALIDE_COMPILER_INSTALL_PATH
  paths.emplace_back(KILN_HALIDE_COMPILER_INSTALL_PATH);
#endif
  return paths;
}

const std::string& module_path() {
  static const std::string path = [] {
    struct stat st;
    for (const auto& p : candidate_paths())
      if (stat(p.c_str(), &st) == 0) return p;
    return std::string();
  }();
  return path;
}

struct Module {
  int (*compile_kernel)(const fusion::Kernel*, const char*, const char*, const char*, char*, size_t);
  int (*compile_runtime)(const char*, char*, size_t);
  int (*target_name)(char*, size_t);
};

template <typename F>
F symbol(void* handle, const char* name) {
  void* s = dlsym(handle, name);
  KILN_CHECK(s, "halide: the compiler module ", module_path(), " has no ", name);
  return reinterpret_cast<F>(s);
}

Module load() {
  const std::string& path = module_path();
  KILN_CHECK(!path.empty(),
             "halide: the compiler module libkiln_halide_compiler.so was not found (set "
             "KILN_HALIDE_COMPILER to its path)");
  const auto start = std::chrono::steady_clock::now();
  // Local: its hidden copy of kiln's code and Halide's symbols stay out of the program's way.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(handle, "halide: could not load the compiler module: ", dlerror());
  const int abi = symbol<int (*)()>(handle, "kiln_halide_compiler_abi")();
  KILN_CHECK(abi == kCompilerAbi, "halide: the compiler module ", path, " was built from other sources (abi ", abi,
             ", expected ", kCompilerAbi, ")");
  Module m{symbol<decltype(Module::compile_kernel)>(handle, "kiln_halide_compile_kernel"),
           symbol<decltype(Module::compile_runtime)>(handle, "kiln_halide_compile_runtime"),
           symbol<decltype(Module::target_name)>(handle, "kiln_halide_target_name")};
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log().debug("loaded the Halide compiler from {} in {:.1f} ms", path, ms);
  return m;
}

// Loaded once; a failed load throws, and the next call tries again.
const Module& module() {
  static const Module m = load();
  return m;
}

void check(int rc, const char* error) { KILN_CHECK(rc == 0, error); }

}  // namespace

void compile_kernel_object(const fusion::Kernel& kernel, const std::string& name, const std::string& object_path,
                           const std::string& dump_dir) {
  char error[4096] = "";
  check(module().compile_kernel(&kernel, name.c_str(), object_path.c_str(), dump_dir.c_str(), error, sizeof error),
        error);
}

void compile_runtime_object(const std::string& object_path) {
  char error[4096] = "";
  check(module().compile_runtime(object_path.c_str(), error, sizeof error), error);
}

std::string compiler_target() {
  char name[4096] = "";
  check(module().target_name(name, sizeof name), name);
  return name;
}

std::string compiler_revision() {
  struct stat st;
  if (module_path().empty() || stat(module_path().c_str(), &st) != 0) return "none";
  const int64_t words[] = {int64_t(st.st_size), int64_t(st.st_mtim.tv_sec), int64_t(st.st_mtim.tv_nsec)};
  return std::to_string(fnv1a64(words, sizeof words));
}

std::string host_cpu_id() {
  // The words Halide reads to choose a target's features: the vendor, leaf 1's feature flags,
  // leaf 7's (subleaves 0 and 1), and which register states the OS saves (XCR0: AVX and AVX-512
  // need its consent). Not leaf 1's eax and ebx: they hold the core's number.
  std::vector<unsigned> words;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __get_cpuid_count(0, 0, &a, &b, &c, &d);
  words.insert(words.end(), {b, c, d});
  __get_cpuid_count(1, 0, &a, &b, &c, &d);
  const bool osxsave = c & (1u << 27);
  words.insert(words.end(), {c, d});
  for (unsigned sub : {0u, 1u}) {
    a = b = c = d = 0;
    __get_cpuid_count(7, sub, &a, &b, &c, &d);
    words.insert(words.end(), {a, b, c, d});
  }
  if (osxsave) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    words.push_back(lo);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(words.data(), words.size() * 4)));
  return std::string("x86-") + hex;
}

}  // namespace kiln::codegen::halide
