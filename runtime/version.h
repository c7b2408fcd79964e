// kiln's version (the CMake project's), as `kiln info` prints it and the kernel cache keys it.
#pragma once

namespace kiln {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace kiln
