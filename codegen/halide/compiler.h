// The Halide compiler, loaded when a kernel must be built. Halide and LLVM live in a module of
// their own (libkiln_halide_compiler.so: the lowering, scheduling and compiling) that kiln opens
// with dlopen at the first compile: linked into every program, they cost each start ~50-75 ms of
// loading and relocating (3100 page faults, at ~15 us each on the VMs measured), which a process
// whose kernels all come from the disk cache never needs. The module carries a hidden copy of the
// kiln code it calls, state included: it must only read what it is given (a pass run in there
// would stamp nodes with its own copy's numbers, fusion::begin_pass).
#pragma once
#include <cstdint>
#include <string>

#include "fusion/kernel.h"
#include "tracer/ir.h"

namespace kiln::codegen::halide {

// Checked when the module is loaded: both sides must agree on the layout of what crosses (a
// kernel, its nodes and their operands). A module of another kiln build usually differs here;
// KILN_HALIDE_COMPILER (README) names the module when the build tree's is not the one to use.
// Sizes only: a change that keeps them (fields reordered) passes, and such a mismatched module
// compiles wrong kernels into the disk cache (seen while developing): bump the last number then.
constexpr uint64_t kCompilerAbi = uint64_t(sizeof(fusion::Kernel)) << 48 | uint64_t(sizeof(ir::Node)) << 32 |
                                  uint64_t(sizeof(ir::Operand)) << 16 | uint64_t(sizeof(ir::View)) << 4 | 2;

// Compiles `kernel` to an object file exporting `<name>_argv` (compiler_module.cpp); throws kiln::Error.
void compile_kernel_object(const fusion::Kernel& kernel, const std::string& name, const std::string& object_path,
                           const std::string& dump_dir);
// The same with the schedule `schedule` names (ScheduleChoice::text(), schedule_params.h).
void compile_kernel_object(const fusion::Kernel& kernel, const std::string& schedule, const std::string& name,
                           const std::string& object_path, const std::string& dump_dir);
// Compiles the Halide runtime that every kernel resolves against.
void compile_runtime_object(const std::string& object_path);
// Halide's name for the target kernels are compiled for (loads the module).
std::string compiler_target();

// Identifies the module's build without loading it: a rebuild may change the code kernels get,
// so cached kernels are kept per build.
std::string compiler_revision();
// Identifies this CPU's instruction sets (a hash of its CPUID feature words): with the revision,
// it names the kernel cache's directory, which a program finds without loading the compiler.
std::string host_cpu_id();

}  // namespace kiln::codegen::halide
