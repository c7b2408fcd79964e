// libtorch's Device, for programs that name one (`torch::Device device(torch::kCPU)`,
// `x.to(device)`, `model->to(device)`). kiln decides itself where kernels run, so a device is
// checked to be the CPU and otherwise carries no meaning.
#pragma once
#include <string>

#include "frontend/scalar.h"
#include "runtime/error.h"

namespace kiln {

class Device {
 public:
  Device(DeviceType type = kCPU, int64_t index = -1) : type_(type), index_(index) {}
  // "cpu" or "cpu:0", as libtorch parses device strings.
  Device(const std::string& spec) {
    const bool indexed = spec.rfind("cpu:", 0) == 0 && spec.size() > 4 &&
                         spec.find_first_not_of("0123456789", 4) == std::string::npos && spec.size() < 12;
    KILN_CHECK(spec == "cpu" || indexed, "Device: kiln only knows the device 'cpu' (or 'cpu:N'), got '", spec, "'");
    if (indexed) index_ = std::stoll(spec.substr(4));
  }
  Device(const char* spec) : Device(std::string(spec)) {}
  DeviceType type() const noexcept { return type_; }
  int64_t index() const noexcept { return index_; }
  bool has_index() const noexcept { return index_ >= 0; }
  bool is_cpu() const noexcept { return true; }
  bool is_cuda() const noexcept { return false; }
  std::string str() const { return has_index() ? "cpu:" + std::to_string(index_) : "cpu"; }
  bool operator==(const Device& o) const noexcept { return index_ == o.index_; }
  bool operator!=(const Device& o) const noexcept { return !(*this == o); }
  // So that `x.to(device)`, `torch::zeros(size, device)` and `options.device(device)` compile.
  operator TensorOptions() const { return TensorOptions(type_); }
  operator DeviceType() const { return type_; }

 private:
  DeviceType type_ = kCPU;
  int64_t index_ = -1;
};

}  // namespace kiln
