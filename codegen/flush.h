// The flush driver, the same for every backend: orders what a flush must compute (fusion::make_plan),
// rewrites it (CSE, simplification), partitions it into kernels (cached by the segment's
// structure) and hands the kernel list to the backend of the segment's device: the CUDA backend where it
// computes on a CUDA device, else the one that KILN_BACKEND names.
#pragma once
#include <vector>

#include "codegen/backend.h"

namespace kiln::codegen {

// Computes `roots` and what they need (tracer::FlushHook).
void flush(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded);

// Makes the tracer flush through flush(). The frontend calls it before main: a program that
// links kiln's static libraries gets the driver with it.
void install_flush_driver();

// The backend chosen by Config::backend: "halide", "interp" or "unfused" (codegen/unfused.h).
Backend& current_backend();

}  // namespace kiln::codegen
