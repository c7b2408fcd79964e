// The entry points of libkiln_halide_compiler.so, the module that holds Halide and LLVM
// (codegen/halide/compiler.h loads it). C linkage and errors as text: the module carries its own
// hidden copy of the kiln code it uses, so a kiln::Error thrown in here is not the type the
// caller catches.
#include <cstdio>
#include <exception>

#include "codegen/halide/compiler.h"
#include "codegen/halide/lower.h"

#define KILN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Runs `f`; an exception becomes its message in `error` and a nonzero result.
template <typename F>
int guarded(char* error, size_t size, F f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, size, "halide: unknown exception");
  }
  return 1;
}

}  // namespace

using namespace kiln::codegen::halide;

KILN_EXPORT uint64_t kiln_halide_compiler_abi() { return kCompilerAbi; }

KILN_EXPORT int kiln_halide_compile_kernel(const kiln::fusion::Kernel* kernel, const char* name,
                                           const char* object_path, const char* dump_dir, char* error,
                                           size_t error_size) {
  return guarded(error, error_size, [&] { compile_kernel(*kernel, name, object_path, dump_dir); });
}

KILN_EXPORT int kiln_halide_compile_runtime(const char* object_path, char* error, size_t error_size) {
  return guarded(error, error_size, [&] { compile_runtime(object_path); });
}

// The name, or on failure the error, in `out`.
KILN_EXPORT int kiln_halide_target_name(char* out, size_t size) {
  return guarded(out, size, [&] { std::snprintf(out, size, "%s", target_name().c_str()); });
}
