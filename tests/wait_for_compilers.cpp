// Tests count launches and compare fused kernels with the interpreter: every kernel is compiled
// before it first runs (KILN_COMPILE=wait) unless KILN_COMPILE says otherwise (ctest runs the
// random programs again with background compilation: tests/CMakeLists.txt).
#include <cstdlib>

#include "runtime/config.h"

namespace {
const bool kWaitForCompilers = [] {
  if (!std::getenv("KILN_COMPILE")) kiln::config().compile_in_background = false;
  return true;
}();
}  // namespace
