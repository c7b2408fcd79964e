#include "frontend/device.h"

namespace kiln {

namespace detail {
void require_cpu(DeviceType type, const char* what) {
  KILN_CHECK(type == kCPU, what,
             ": a CUDA tensor was asked for, but kiln has no CUDA backend yet, so no CUDA "
             "device is available (torch::cuda::is_available() is false); use torch::kCPU");
}
}  // namespace detail

Device::Device(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  KILN_CHECK(name == "cpu" || name == "cuda",
             "Device: expected one of cpu, cuda device type at start of device "
             "string: ",
             spec);
  type_ = name == "cpu" ? kCPU : kCUDA;
  if (colon == std::string::npos) return;
  const std::string index = spec.substr(colon + 1);
  KILN_CHECK(!index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos,
             "Device: invalid device string: '", spec, "'");
  index_ = std::stoll(index);
}

}  // namespace kiln
