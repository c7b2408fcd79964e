// Scalar: a number given where a tensor may stand (x * 2, full(..., 0.5)), and TensorOptions.
#pragma once
#include <cstdint>
#include <type_traits>

#include "runtime/dtype.h"

namespace kiln {

// An integer keeps its int64 value as well as its nearest double: above 2^53 the double is not
// the number (full({1}, (1LL << 53) + 1, kLong) held 2^53).
class Scalar {
 public:
  Scalar() = default;
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Scalar(T v)
      : value_(double(v)),
        integer_(std::is_integral_v<T> ? int64_t(v) : 0),
        type_(std::is_same_v<T, bool> ? kBool
              : std::is_integral_v<T> ? kLong
                                      : kDouble) {}
  Scalar(Half v) : value_(float(v)), type_(kDouble) {}
  Scalar(BFloat16 v) : value_(float(v)), type_(kDouble) {}
  double toDouble() const { return value_; }
  float toFloat() const { return isFloatingPoint() ? float(value_) : float(integer_); }  // one rounding
  int64_t toLong() const { return isFloatingPoint() ? int64_t(value_) : integer_; }
  int64_t toInt() const { return toLong(); }
  bool toBool() const { return value_ != 0; }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return toBool();
    else if constexpr (std::is_integral_v<T>)
      return static_cast<T>(toLong());
    else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return T(toFloat());
    else
      return static_cast<T>(value_);
  }
  // The category the number came from: bool, integer or floating (as kDouble).
  ScalarType type() const { return type_; }
  bool isFloatingPoint() const { return type_ == kDouble; }
  bool isIntegral(bool include_bool = false) const { return type_ == kLong || (include_bool && type_ == kBool); }

 private:
  double value_ = 0;
  int64_t integer_ = 0;  // the value of a bool or an integer
  ScalarType type_ = kDouble;
};

// How clone lays out its result: Preserve keeps a dense input's strides (and the order of an
// other input's dims), as libtorch's clone does by default.
enum class MemoryFormat : uint8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

// libtorch's device names. Asking for a tensor on a CUDA device where none is available throws
// kiln::Error saying why (torch::cuda::is_available() is false).
enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device;  // device.h

namespace detail {
// Throws kiln::Error unless a tensor can be put on device `type` (`index`, -1 for the current
// one) here, saying why not; `what` names who asked ("to", "TensorOptions").
void require_device(DeviceType type, int64_t index, const char* what);
}  // namespace detail

// libtorch's tensor layouts: kiln's tensors are all strided (dense, with any strides).
enum class Layout : uint8_t { Strided };
inline constexpr Layout kStrided = Layout::Strided;

struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t), has_dtype_(true) {}
  TensorOptions(DeviceType type) : device_type_(type), has_device_(true) {
    detail::require_device(type, -1, "TensorOptions");
  }
  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    o.has_dtype_ = true;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
  TensorOptions device(DeviceType type, int64_t index = -1) const {
    detail::require_device(type, index, "TensorOptions::device");
    auto o = *this;
    o.device_type_ = type;
    o.device_index_ = index;
    o.has_device_ = true;
    return o;
  }
  TensorOptions device(const Device& d) const;  // device.h
  DeviceType device_type() const { return device_type_; }
  Device device() const;                                // device.h
  TensorOptions layout(Layout) const { return *this; }  // strided, the only layout
  Layout layout() const { return kStrided; }
  ScalarType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }
  bool has_device() const { return has_device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  ScalarType dtype_ = kFloat;
  DeviceType device_type_ = kCPU;
  int64_t device_index_ = -1;
  bool has_dtype_ = false;
  bool has_device_ = false;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions device(DeviceType type) { return TensorOptions(type); }

}  // namespace kiln
