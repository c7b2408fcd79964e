#include "frontend/device.h"

#include "runtime/cuda/driver.h"

namespace kiln {

namespace detail {
void require_device(DeviceType type, int64_t index, const char* what) {
  if (type == kCPU) return;
  KILN_CHECK(cuda_driver::available(), what,
             ": a CUDA tensor was asked for, but CUDA is not available: ", cuda_driver::unavailable_reason(),
             " (torch::cuda::is_available() is false); use torch::kCPU");
  KILN_CHECK(index < cuda_driver::device_count(), what, ": CUDA device ", index, " was asked for, but there ",
             cuda_driver::device_count() == 1 ? "is 1 CUDA device"
                                              : "are " + std::to_string(cuda_driver::device_count()) + " CUDA devices");
}
}  // namespace detail

namespace cuda {
bool is_available() { return cuda_driver::available(); }
int64_t device_count() { return cuda_driver::device_count(); }
const std::string& unavailable_reason() { return cuda_driver::unavailable_reason(); }
void synchronize(int64_t device) {
  if (!is_available()) return;
  if (device >= 0) return cuda_driver::synchronize(int(device));
  for (int d = 0; d < cuda_driver::device_count(); ++d) cuda_driver::synchronize(d);
}
void manual_seed(uint64_t) {}
void manual_seed_all(uint64_t) {}
}  // namespace cuda

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
