// Launches a compiled kernel on the buffers of the flush: marshals its arguments in the order
// of arguments.h and calls it.
#pragma once
#include "fusion/kernel.h"

namespace kiln::codegen::halide {

// A compiled kernel's entry point (`<name>_argv`, compiler_module.cpp): its arguments as an array of pointers.
using KernelFn = int (*)(void**);

// Allocates the kernel's outputs and runs it (its reads must be computed); throws kiln::Error if
// the kernel fails.
void launch(const fusion::Kernel& k, KernelFn fn);

}  // namespace kiln::codegen::halide
