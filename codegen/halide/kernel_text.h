// A kernel as text, to be rebuilt in another process: `kiln tune` tunes the kernels a program
// recorded in its one run (KILN_TUNE_RECORD), and a tuning candidate compiles in a child process
// (tools/compile_candidate.cpp). The text holds the kernel's structure and sizes (nodes with
// their ops, dtypes, shapes, attributes and constants; reads with their strides and offsets), not
// the values it read: a rebuilt kernel reads random values, which time alike.
#pragma once
#include <string>
#include <vector>

#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// One line per field; no line of it is "end".
std::string kernel_text(const fusion::Kernel& k);

// A kernel rebuilt from its text, with nodes of its own: each read holds a buffer of random
// values (a fixed seed), as if computed; outputs are not.
struct RebuiltKernel {
  fusion::Kernel kernel;
  std::vector<ir::NodePtr> nodes;  // what kernel's nodes and reads point to
};
// Throws kiln::Error on text that kernel_text did not write (or a kiln with other ops wrote).
RebuiltKernel rebuild_kernel(const std::string& text);

}  // namespace kiln::codegen::halide
