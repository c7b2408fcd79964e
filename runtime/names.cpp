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
  }
  return "?";
}

const char* torch_type_name(ScalarType t) {
  switch (t) {
    case kBool: return "CPUBoolType";
    case kLong: return "CPULongType";
    case kFloat: return "CPUFloatType";
    case kDouble: return "CPUDoubleType";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const std::vector<int64_t>& s) {
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << "]";
}

}  // namespace kiln
