// libtorch's Device, for programs that name one (`torch::Device device(torch::kCUDA)`,
// `x.to(device)`, `model->to(device)`), and torch::cuda's functions. A tensor carries its device;
// where CUDA is not available, putting a tensor or a module there throws kiln::Error saying why.
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
  // So that `x.to(device)` and `torch::zeros(size, device)` compile; a CUDA device that is not
  // available throws here, where a tensor would be put on it.
  operator TensorOptions() const { return TensorOptions().device(type_, index_); }
  operator DeviceType() const { return type_; }

 private:
  DeviceType type_ = kCPU;
  int64_t index_ = -1;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

inline TensorOptions TensorOptions::device(const Device& d) const { return device(d.type(), d.index()); }
inline Device TensorOptions::device() const { return Device(device_type_, device_index_); }
inline TensorOptions device(const Device& d) { return TensorOptions().device(d); }

// torch::cuda's functions.
namespace cuda {
// Whether a CUDA device is available (the driver loaded and counts one); else
// unavailable_reason() says why.
bool is_available();
int64_t device_count();
const std::string& unavailable_reason();
// Waits for the work queued on `device` (-1: every device); nothing to wait for without one.
void synchronize(int64_t device = -1);
// Seeds the generators of CUDA devices. kiln draws random numbers on the host, with the one
// generator torch::manual_seed seeds, so these seed nothing more.
void manual_seed(uint64_t seed);
void manual_seed_all(uint64_t seed);
}  // namespace cuda

namespace detail {
// The device of storage index `cuda_device` (Storage::cuda_device): -1 is the CPU.
inline Device device_of_index(int cuda_device) { return cuda_device < 0 ? Device(kCPU) : Device(kCUDA, cuda_device); }
}  // namespace detail

}  // namespace kiln
