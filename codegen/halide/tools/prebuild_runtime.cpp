// Builds the shared Halide runtime for this machine while kiln itself is built (CMake target
// kiln_halide_runtime), so that a process with an empty kernel cache loads it instead of spending
// about a second building it before its first step (codegen/halide/backend.cpp, ensure_runtime).
// Usage: kiln_prebuild_runtime <object to write> <file to write the CPU's id to>
#include <fstream>
#include <iostream>

#include "codegen/halide/compiler.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " <runtime.o> <cpu.txt>\n";
    return 2;
  }
  kiln::codegen::halide::compile_runtime_object(argv[1]);
  std::ofstream(argv[2]) << kiln::codegen::halide::host_cpu_id() << "\n";
  return 0;
}
