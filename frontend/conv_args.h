// Internal to frontend/: the size arguments of convolution and pooling ops, given as one int or
// one per spatial dimension as libtorch accepts them.
#pragma once
#include "frontend/tensor.h"

namespace kiln::detail {

struct Pair {
  int64_t h, w;
};
// A 2-D argument: one value for both dimensions, or two.
inline Pair pair(IntArrayRef v, const char* op, const char* what) {
  KILN_CHECK(v.size() == 1 || v.size() == 2, op, ": ", what, " must be one int or two, got ", v.vec());
  return v.size() == 1 ? Pair{v[0], v[0]} : Pair{v[0], v[1]};
}
// A 1-D argument.
inline int64_t one(IntArrayRef v, const char* op, const char* what) {
  KILN_CHECK(v.size() == 1, op, ": ", what, " must be one int, got ", v.vec());
  return v[0];
}

}  // namespace kiln::detail
