// Lowers a kernel to a Halide pipeline, schedules it for the target and compiles it to an object
// file exporting `<name>_argv`. Only lower.cpp and ops.cpp (ops.h) include Halide.h; they are built
// into the compiler module, which kiln reaches through compiler.h.
#pragma once
#include <string>

#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// Compiles `kernel` to `object_path` as function `name`; also writes the lowered statement to
// `dump_dir` when it is not empty. Throws kiln::Error on failure.
void compile_kernel(const fusion::Kernel& kernel, const std::string& name, const std::string& object_path,
                    const std::string& dump_dir);

// Compiles the Halide runtime (shared by every kernel, which are built without their own copy).
void compile_runtime(const std::string& object_path);

// Names the target, e.g. "x86-64-linux-avx-avx2-f16c-fma-sse41".
std::string target_name();

}  // namespace kiln::codegen::halide
