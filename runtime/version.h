// kiln's version, the CMake project's (compiled in by CMakeLists.txt), as `kiln info` prints it
// and the kernel cache keys it.
#pragma once

namespace kiln {
const char* version();
}  // namespace kiln
