#include "runtime/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "runtime/config.h"

namespace kiln {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("kiln");
    l->set_pattern("[kiln %l] %v");
    l->set_level(spdlog::level::from_str(config().log_level));
    return l;
  }();
  return *logger;
}

}  // namespace kiln
