#include "codegen/halide/compiler.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "runtime/disk_cache.h"
#include "runtime/error.h"
#include "runtime/log.h"

namespace kiln::codegen::halide {
namespace {

// Where the module is: KILN_HALIDE_COMPILER when set (and then only there), else the build
// tree's if it exists (the tests and benchmarks use the module built with them), else the
// installed one. Empty when there is none.
std::string module_path() {
  struct stat st;
  if (const char* env = std::getenv("KILN_HALIDE_COMPILER")) return stat(env, &st) == 0 ? env : "";
  for (const char* p : {KILN_HALIDE_COMPILER_BUILD_PATH, KILN_HALIDE_COMPILER_INSTALL_PATH})
    if (stat(p, &st) == 0) return p;
  return "";
}

struct Module {
  int (*compile_kernel)(const fusion::Kernel*, const char*, const char*, const char*, char*, size_t);
  int (*compile_runtime)(const char*, char*, size_t);
  int (*target_name)(char*, size_t);
};

template <typename F>
F symbol(void* handle, const char* name) {
  void* s = dlsym(handle, name);
  KILN_CHECK(s, "halide: the compiler module has no ", name);
  return reinterpret_cast<F>(s);
}

Module load() {
  const std::string path = module_path();
  const char* env = std::getenv("KILN_HALIDE_COMPILER");
  KILN_CHECK(!path.empty(), "halide: the compiler module was not found at ",
             env ? env : KILN_HALIDE_COMPILER_BUILD_PATH " or " KILN_HALIDE_COMPILER_INSTALL_PATH,
             env ? " (KILN_HALIDE_COMPILER)" : " (KILN_HALIDE_COMPILER names another)");
  const auto start = std::chrono::steady_clock::now();
  // Local: its hidden copy of kiln's code and Halide's symbols stay out of the program's way.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(handle, "halide: could not load the compiler module: ", dlerror());
  const uint64_t abi = symbol<uint64_t (*)()>(handle, "kiln_halide_compiler_abi")();
  KILN_CHECK(abi == kCompilerAbi, "halide: the compiler module ", path, " belongs to another build of kiln (abi ", abi,
             ", expected ", kCompilerAbi, ")");
  Module m{symbol<decltype(Module::compile_kernel)>(handle, "kiln_halide_compile_kernel"),
           symbol<decltype(Module::compile_runtime)>(handle, "kiln_halide_compile_runtime"),
           symbol<decltype(Module::target_name)>(handle, "kiln_halide_target_name")};
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log().debug("loaded the Halide compiler from {} in {:.1f} ms", path, ms);
  return m;
}

// Loaded once. A failed load is remembered: each compile after it fails with the same message
// (and the backend runs that kernel on the interpreter).
const Module& module() {
  static std::string failure;
  static const Module m = [] {
    try {
      return load();
    } catch (const Error& e) {
      failure = e.what();
      return Module{};
    }
  }();
  KILN_CHECK(failure.empty(), failure);
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
  // The module's bytes: any rebuild that changes its code (lowering, scheduling, the kiln code it
  // links) names a new folder, and a copy of the same build finds the old one.
  std::ifstream file(module_path(), std::ios::binary);
  if (!file) return "none";
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return std::to_string(fnv1a64(bytes.data(), bytes.size()));
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
