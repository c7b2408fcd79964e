// libtorch's names for kiln: a libtorch 1.13 program compiles unchanged with
// `#include <kiln/torch.h>` in place of `#include <torch/torch.h>`. Everything lives in namespace
// kiln; `torch` and `at` are aliases of it, and the few names libtorch keeps elsewhere are
// declared where libtorch programs look for them.
#pragma once
// What <torch/torch.h> brings in that programs rely on without including it themselves.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {

// torch::NoGradGuard, torch::AutoGradMode (libtorch has them at the top level too).
using autograd::AutoGradMode;
using autograd::GradMode;
using autograd::NoGradGuard;

// torch::InferenceMode: gradients off; kiln has no separate inference-only tensors.
struct InferenceMode : autograd::AutoGradMode {
  explicit InferenceMode(bool enabled = true) : autograd::AutoGradMode(!enabled) {}
};

namespace autograd {
// torch::autograd::variable_list, tensor_list and Variable.
using ::kiln::tensor_list;
using ::kiln::variable_list;
using Variable = ::kiln::Tensor;
}  // namespace autograd

// kiln runs where it chooses; to a libtorch program there is no CUDA device.
namespace cuda {
inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
inline void manual_seed(uint64_t) {}
inline void manual_seed_all(uint64_t) {}
inline void synchronize(int64_t = -1) {}
}  // namespace cuda

namespace detail {
// TORCH_CHECK's message: the caller's, or libtorch's default naming the failed condition.
inline std::string check_message(const char* condition) {
  return concat("Expected ", condition, " to be true, but got false.");
}
template <typename... Args>
std::string check_message(const char*, const Args&... args) {
  return concat(args...);
}
}  // namespace detail

}  // namespace kiln

namespace torch = kiln;
namespace at = kiln;

// c10::Error is what libtorch throws; kiln throws kiln::Error, so catching either works.
namespace c10 {
using Error = ::kiln::Error;
}  // namespace c10

// libtorch's checks (c10/util/Exception.h), each throwing kiln::Error. The message is the
// arguments streamed together; without any, it names the condition.
#ifndef TORCH_CHECK
#define TORCH_CHECK(cond, ...)                                                             \
  do {                                                                                     \
    if (!(cond)) throw ::kiln::Error(::kiln::detail::check_message(#cond, ##__VA_ARGS__)); \
  } while (0)
#endif
#ifndef TORCH_INTERNAL_ASSERT
#define TORCH_INTERNAL_ASSERT(cond, ...)                                                                           \
  do {                                                                                                             \
    if (!(cond))                                                                                                   \
      throw ::kiln::Error(::kiln::detail::concat("Internal assert failed: " #cond " at ", __FILE__, ":", __LINE__, \
                                                 ". ", ##__VA_ARGS__));                                            \
  } while (0)
#endif
#ifndef AT_ASSERT
#define AT_ASSERT(cond, ...) TORCH_INTERNAL_ASSERT(cond, ##__VA_ARGS__)
#endif
#ifndef AT_ERROR
#define AT_ERROR(...) throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__))
#endif
#ifndef TORCH_WARN
#define TORCH_WARN(...) (std::cerr << "Warning: " << ::kiln::detail::concat(__VA_ARGS__) << '\n')
#endif

// Options with chained setters in user code (`TORCH_ARG(double, lr) = 0.1;`).
#ifndef TORCH_ARG
#define TORCH_ARG(T, name) KILN_ARG(T, name)
#endif
