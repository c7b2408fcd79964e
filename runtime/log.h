// Logging through spdlog; the level comes from KILN_LOG (trace, debug, info, warn, error, off).
#pragma once
#include <spdlog/spdlog.h>

namespace kiln {
spdlog::logger& log();
}  // namespace kiln
