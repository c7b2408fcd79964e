// The Halide backend: fused kernels compiled for this CPU, cached in memory and on disk.
#pragma once
#include "codegen/backend.h"

namespace kiln::codegen {

Backend& halide_backend();

}  // namespace kiln::codegen
