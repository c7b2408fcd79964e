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

int failed(char* error, size_t size) {
  try {
    throw;
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
  try {
    compile_kernel(*kernel, name, object_path, dump_dir);
    return 0;
  } catch (...) {
    return failed(error, error_size);
  }
}

KILN_EXPORT int kiln_halide_compile_runtime(const char* object_path, char* error, size_t error_size) {
  try {
    compile_runtime(object_path);
    return 0;
  } catch (...) {
    return failed(error, error_size);
  }
}

KILN_EXPORT int kiln_halide_target_name(char* out, size_t size) {
  try {
    std::snprintf(out, size, "%s", target_name().c_str());
    return 0;
  } catch (...) {
    return failed(out, size);
  }
}
