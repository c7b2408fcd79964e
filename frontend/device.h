// libtorch's Device, for programs that name one (`torch::Device device(torch::kCPU)`,
// `x.to(device)`, `model->to(device)`). kiln decides itself how kernels run on the CPU; a CUDA
// device can be named (so that `cuda::is_available() ? kCUDA : kCPU` compiles), and putting a
// tensor or a module there throws kiln::Error until kiln has a CUDA backend.
#pragma once
#include <ostream>
#include <string>

#include "frontend/scalar.h"
#include "runtime/error.h"

namespace kiln {

class Device {
 public:
  Device(DeviceType type = kCPU, int64_t index = -1) : type_(type), index_(index) {
    KILN_CHECK(index >= -1, "Device: device index must be -1 or non-negative, got ", index);
  }
  // "cpu", "cuda", "cpu:N" or "cuda:N", as libtorch parses device strings.
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}
  DeviceType type() const noexcept { return type_; }
  int64_t index() const noexcept { return index_; }
  bool has_index() const noexcept { return index_ >= 0; }
  bool is_cpu() const noexcept { return type_ == kCPU; }
  bool is_cuda() const noexcept { return type_ == kCUDA; }
  std::string str() const {
    const std::string name = is_cpu() ? "cpu" : "cuda";
    return has_index() ? name + ":" + std::to_string(index_) : name;
  }
  bool operator==(const Device& o) const noexcept { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const noexcept { return !(*this == o); }
  // So that `x.to(device)`, `torch::zeros(size, device)` and `options.device(device)` compile;
  // a CUDA device throws here, where a tensor would be put on it.
  operator TensorOptions() const { return TensorOptions(type_); }
  operator DeviceType() const { return type_; }

 private:
  DeviceType type_ = kCPU;
  int64_t index_ = -1;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace kiln
