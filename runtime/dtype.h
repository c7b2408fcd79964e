// Element types and type promotion, with libtorch's names, sizes and rules.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <type_traits>

namespace kiln {

// The first four keep their values (kernel cache keys and plans hash them); the narrow types
// follow.
enum class ScalarType : uint8_t { Bool, Long, Float, Double, Byte, Char, Short, Int, Half, BFloat16 };
using Dtype = ScalarType;
inline constexpr int kNumScalarTypes = 10;

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kInt64 = ScalarType::Long;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kFloat32 = ScalarType::Float;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kFloat64 = ScalarType::Double;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kUInt8 = ScalarType::Byte;
inline constexpr ScalarType kByte = ScalarType::Byte;
inline constexpr ScalarType kInt8 = ScalarType::Char;
inline constexpr ScalarType kChar = ScalarType::Char;
inline constexpr ScalarType kInt16 = ScalarType::Short;
inline constexpr ScalarType kShort = ScalarType::Short;
inline constexpr ScalarType kInt32 = ScalarType::Int;
inline constexpr ScalarType kInt = ScalarType::Int;
inline constexpr ScalarType kFloat16 = ScalarType::Half;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;

inline size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return 1;
    case ScalarType::Long: return 8;
    case ScalarType::Float: return 4;
    case ScalarType::Double: return 8;
    case ScalarType::Byte: return 1;
    case ScalarType::Char: return 1;
    case ScalarType::Short: return 2;
    case ScalarType::Int: return 4;
    case ScalarType::Half: return 2;
    case ScalarType::BFloat16: return 2;
  }
  return 0;
}
inline bool is_floating(ScalarType t) { return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16; }
// float16 and bfloat16: stored narrow, computed in float32 (as PyTorch's CPU kernels do), each
// result rounded to the dtype.
inline bool is_reduced_float(ScalarType t) { return t == kHalf || t == kBFloat16; }
// The integer types, bool aside (libtorch's isIntegralType(t, /*includeBool=*/false)).
inline bool is_integer(ScalarType t) { return t == kLong || t == kInt || t == kShort || t == kChar || t == kByte; }
// Integer types narrower than int64: computed as int64 and wrapped to their width.
inline bool is_narrow_integer(ScalarType t) { return is_integer(t) && t != kLong; }
const char* dtype_name(ScalarType t);       // "float32"
const char* torch_type_name(ScalarType t);  // "CPUFloatType", as libtorch prints it
inline std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

// Category rank used by promotion: bool < integer < floating.
inline int dtype_category(ScalarType t) { return t == kBool ? 0 : is_integer(t) ? 1 : 2; }
// libtorch's promote_types: the higher category wins; within integers the wider, uint8 with a
// signed type the signed type wide enough for both (int8: int16); float16 with bfloat16 float32.
ScalarType promote(ScalarType a, ScalarType b);
inline ScalarType promote_types(ScalarType a, ScalarType b) { return promote(a, b); }
// libtorch's can_cast: whether an in-place op or an `out=` may write a `from` result into `to`
// (no floating into integer, no non-bool into bool).
inline bool can_cast(ScalarType from, ScalarType to) { return dtype_category(from) <= dtype_category(to); }

// `v` (an integer's value in int64) wrapped to `t`'s width, as C++'s conversions do in two's
// complement; other types are returned as they are.
inline int64_t wrap_integer(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return int64_t(uint8_t(uint64_t(v)));
    case ScalarType::Char: return int64_t(int8_t(uint8_t(uint64_t(v))));
    case ScalarType::Short: return int64_t(int16_t(uint16_t(uint64_t(v))));
    case ScalarType::Int: return int64_t(int32_t(uint32_t(uint64_t(v))));
    case ScalarType::Bool:
    case ScalarType::Long:
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::Half:
    case ScalarType::BFloat16: break;
  }
  return v;
}

// float16 and bfloat16 bits from a float32, rounded to nearest even (NaN stays a quiet NaN), and
// back (exact). Bit manipulation (F. Giesen's float_to_half_fast3_rtne and half_to_float), not
// _Float16, which clang does not take on x86-64.
inline uint16_t float_to_half_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t out;
  if (u >= (127u + 16u) << 23) {  // beyond float16's range: infinity, or NaN
    out = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (u < 113u << 23) {  // a float16 subnormal or zero: the FPU rounds at 2^-24
    const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    float magic, a;
    std::memcpy(&magic, &magic_bits, sizeof magic);
    std::memcpy(&a, &u, sizeof a);
    a += magic;
    std::memcpy(&out, &a, sizeof out);
    out -= magic_bits;
  } else {
    const uint32_t mantissa_odd = (u >> 13) & 1u;
    u += (uint32_t(15 - 127) << 23) + 0xfffu + mantissa_odd;  // rebias, round to nearest even
    out = u >> 13;
  }
  return uint16_t(out | (sign >> 16));
}
inline float half_bits_to_float(uint16_t bits) {
  constexpr uint32_t shifted_exponent = 0x7c00u << 13;
  uint32_t u = uint32_t(bits & 0x7fffu) << 13;
  const uint32_t exponent = u & shifted_exponent;
  u += (127u - 15u) << 23;
  float f;
  if (exponent == shifted_exponent) {
    u += (128u - 16u) << 23;  // infinity or NaN
    std::memcpy(&f, &u, sizeof f);
  } else if (exponent == 0) {  // zero or subnormal
    u += 1u << 23;
    const uint32_t magic_bits = 113u << 23;
    float magic;
    std::memcpy(&magic, &magic_bits, sizeof magic);
    std::memcpy(&f, &u, sizeof f);
    f -= magic;
  } else {
    std::memcpy(&f, &u, sizeof f);
  }
  return bits & 0x8000u ? -f : f;
}
inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN, as c10::BFloat16
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float bfloat16_bits_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// libtorch's c10::Half and c10::BFloat16 as host values: 16 bits, read and written as float.
struct Half {
  uint16_t x = 0;
  struct from_bits_t {};
  static constexpr from_bits_t from_bits() { return {}; }
  Half() = default;
  constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  Half(float f) : x(float_to_half_bits(f)) {}
  operator float() const { return half_bits_to_float(x); }
};
struct BFloat16 {
  uint16_t x = 0;
  struct from_bits_t {};
  static constexpr from_bits_t from_bits() { return {}; }
  BFloat16() = default;
  constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  BFloat16(float f) : x(float_to_bfloat16_bits(f)) {}
  operator float() const { return bfloat16_bits_to_float(x); }
};

// A float64 rounded as a kernel of dtype `t` stores it, back as float64: float32 and the
// reduced floats round (the latter through float32, as PyTorch computes them), the others pass.
inline double round_to_float_dtype(double v, ScalarType t) {
  switch (t) {
    case ScalarType::Float: return double(float(v));
    case ScalarType::Half: return double(float(Half(float(v))));
    case ScalarType::BFloat16: return double(float(BFloat16(float(v))));
    case ScalarType::Bool:
    case ScalarType::Long:
    case ScalarType::Double:
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int: break;
  }
  return v;
}

// A float64 as integer dtype `t`, truncated as x86's conversions do (C++ leaves a value out of
// range undefined): int64 through a 64-bit conversion, the narrow types through a 32-bit one (as
// compiled C++, and so PyTorch, converts a float to int8 ... int32), then wrapped to t's width;
// NaN and values beyond the conversion's range give its INT_MIN.
inline int64_t float_to_integer(double v, ScalarType t) {
  if (t == ScalarType::Long) {
    constexpr double limit = 9223372036854775808.0;  // 2^63
    return v >= -limit && v < limit ? int64_t(v) : INT64_MIN;
  }
  constexpr double limit = 2147483648.0;  // 2^31
  return wrap_integer(v >= -limit && v < limit ? int64_t(v) : INT32_MIN, t);
}

// Element i of an array of dtype `t`, as T; and T stored into one (integers wrap, floats round).
template <typename T>
T read_element(const void* base, ScalarType t, int64_t i) {
  switch (t) {
    case ScalarType::Bool: return T(static_cast<const uint8_t*>(base)[i] != 0);
    case ScalarType::Long: return T(static_cast<const int64_t*>(base)[i]);
    case ScalarType::Float: return T(static_cast<const float*>(base)[i]);
    case ScalarType::Double: return T(static_cast<const double*>(base)[i]);
    case ScalarType::Byte: return T(static_cast<const uint8_t*>(base)[i]);
    case ScalarType::Char: return T(static_cast<const int8_t*>(base)[i]);
    case ScalarType::Short: return T(static_cast<const int16_t*>(base)[i]);
    case ScalarType::Int: return T(static_cast<const int32_t*>(base)[i]);
    case ScalarType::Half: return T(float(static_cast<const Half*>(base)[i]));
    case ScalarType::BFloat16: return T(float(static_cast<const BFloat16*>(base)[i]));
  }
  return T();
}
// From a float64: integers truncate and wrap (float_to_integer).
inline void write_element(void* base, ScalarType t, int64_t i, double v) {
  switch (t) {
    case ScalarType::Bool: static_cast<uint8_t*>(base)[i] = v != 0; break;
    case ScalarType::Long: static_cast<int64_t*>(base)[i] = float_to_integer(v, t); break;
    case ScalarType::Float: static_cast<float*>(base)[i] = float(v); break;
    case ScalarType::Double: static_cast<double*>(base)[i] = v; break;
    case ScalarType::Byte: static_cast<uint8_t*>(base)[i] = uint8_t(float_to_integer(v, t)); break;
    case ScalarType::Char: static_cast<int8_t*>(base)[i] = int8_t(float_to_integer(v, t)); break;
    case ScalarType::Short: static_cast<int16_t*>(base)[i] = int16_t(float_to_integer(v, t)); break;
    case ScalarType::Int: static_cast<int32_t*>(base)[i] = int32_t(float_to_integer(v, t)); break;
    case ScalarType::Half: static_cast<Half*>(base)[i] = Half(float(v)); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(base)[i] = BFloat16(float(v)); break;
  }
}
// From an int64 (exact for every integer dtype; floats round once).
inline void write_integer_element(void* base, ScalarType t, int64_t i, int64_t v) {
  switch (t) {
    case ScalarType::Long: static_cast<int64_t*>(base)[i] = v; break;
    case ScalarType::Byte: static_cast<uint8_t*>(base)[i] = uint8_t(wrap_integer(v, t)); break;
    case ScalarType::Char: static_cast<int8_t*>(base)[i] = int8_t(wrap_integer(v, t)); break;
    case ScalarType::Short: static_cast<int16_t*>(base)[i] = int16_t(wrap_integer(v, t)); break;
    case ScalarType::Int: static_cast<int32_t*>(base)[i] = int32_t(wrap_integer(v, t)); break;
    case ScalarType::Float: static_cast<float*>(base)[i] = float(v); break;
    case ScalarType::Half: static_cast<Half*>(base)[i] = Half(float(v)); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(base)[i] = BFloat16(float(v)); break;
    case ScalarType::Bool:
    case ScalarType::Double: write_element(base, t, i, double(v)); break;
  }
}

// The dtype of a C++ element type (a host value of a tensor: data_ptr<T>, item<T>).
template <typename T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return kBool;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return kLong;
  } else if constexpr (std::is_same_v<T, float>) {
    return kFloat;
  } else if constexpr (std::is_same_v<T, double>) {
    return kDouble;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return kByte;
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return kChar;
  } else if constexpr (std::is_same_v<T, int16_t>) {
    return kShort;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return kInt;
  } else if constexpr (std::is_same_v<T, Half>) {
    return kHalf;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return kBFloat16;
  } else {
    static_assert(sizeof(T) == 0, "no kiln dtype holds this C++ type");
  }
}

}  // namespace kiln
