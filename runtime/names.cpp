#include <ostream>

#include "runtime/dtype.h"
#include "runtime/shape.h"

namespace kiln {

const char* dtype_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kLong: return "int64";
    case kFloat: return "float32";
    case kDouble: return "float64";
    case kByte: return "uint8";
    case kChar: return "int8";
    case kShort: return "int16";
    case kInt: return "int32";
    case kHalf: return "float16";
    case kBFloat16: return "bfloat16";
  }
  return "?";
}

const char* torch_type_name(ScalarType t) {
  switch (t) {
    case kBool: return "CPUBoolType";
    case kLong: return "CPULongType";
    case kFloat: return "CPUFloatType";
    case kDouble: return "CPUDoubleType";
    case kByte: return "CPUByteType";
    case kChar: return "CPUCharType";
    case kShort: return "CPUShortType";
    case kInt: return "CPUIntType";
    case kHalf: return "CPUHalfType";
    case kBFloat16: return "CPUBFloat16Type";
  }
  return "?";
}

// libtorch's promoteTypes table, in its own order (u1 i1 i2 i4 i8 f2 f4 f8 b1 bf).
ScalarType promote(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  const int ca = dtype_category(a), cb = dtype_category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {  // floating
    if (is_reduced_float(a) && is_reduced_float(b)) return kFloat;
    return element_size(a) >= element_size(b) ? a : b;
  }
  // integers: uint8 with a signed type needs the next wider signed type when that one is int8.
  if (a == kByte || b == kByte) {
    const ScalarType other = a == kByte ? b : a;
    return other == kChar ? kShort : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, const std::vector<int64_t>& s) {
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << "]";
}

}  // namespace kiln
