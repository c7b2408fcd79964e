// Element types and type promotion (PyTorch's rules, restricted to kiln's four dtypes).
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>

namespace kiln {

enum class ScalarType : uint8_t { Bool, Long, Float, Double };
using Dtype = ScalarType;

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kInt64 = ScalarType::Long;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kFloat32 = ScalarType::Float;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kFloat64 = ScalarType::Double;
inline constexpr ScalarType kDouble = ScalarType::Double;

inline size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 1;
    case ScalarType::Long: return 8;
    case ScalarType::Float: return 4;
    case ScalarType::Double: return 8;
  }
  return 0;
}
inline bool is_floating(ScalarType t) { return t == kFloat || t == kDouble; }
const char* dtype_name(ScalarType t);          // "float32"
const char* torch_type_name(ScalarType t);     // "CPUFloatType", as libtorch prints it
inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

// Category rank used by promotion: bool < integer < floating.
inline int dtype_category(ScalarType t) { return t == kBool ? 0 : t == kLong ? 1 : 2; }
inline ScalarType promote(ScalarType a, ScalarType b) { return a > b ? a : b; }

template <typename T> constexpr ScalarType dtype_of();
template <> constexpr ScalarType dtype_of<bool>() { return kBool; }
template <> constexpr ScalarType dtype_of<int64_t>() { return kLong; }
template <> constexpr ScalarType dtype_of<float>() { return kFloat; }
template <> constexpr ScalarType dtype_of<double>() { return kDouble; }

}  // namespace kiln
