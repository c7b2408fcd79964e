// kiln::Error: every invalid call throws this, naming the op and the shapes or dtypes involved.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

// Shapes print as [2, 3] in messages (defined in runtime/names.cpp).
std::ostream& operator<<(std::ostream& os, const std::vector<int64_t>& shape);

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, "op: message ", shape, ...) throws kiln::Error with the concatenated message.
#define KILN_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__)); \
  } while (0)
