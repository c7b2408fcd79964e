// A view as a node's attribute: WriteView and AddView carry the view of their base that they
// write or add into, and a strided view's backward row the window it read, in the node's `ints`.
// These two functions are the one place that knows the layout (sizes|strides|offset).
#pragma once
#include <cstdint>
#include <vector>

#include "tracer/ir.h"

namespace kiln::ir {

inline std::vector<int64_t> pack_view(const View& v) {
  std::vector<int64_t> ints(v.sizes.begin(), v.sizes.end());
  ints.insert(ints.end(), v.strides.begin(), v.strides.end());
  ints.push_back(v.offset);
  return ints;
}

inline View unpack_view(const std::vector<int64_t>& ints) {
  const auto rank = long(ints.size() - 1) / 2;
  return View{Shape(ints.begin(), ints.begin() + rank), Shape(ints.begin() + rank, ints.begin() + 2 * rank),
              ints.back()};
}

}  // namespace kiln::ir
