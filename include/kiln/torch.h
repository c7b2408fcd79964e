// libtorch's names for kiln: a libtorch 1.13 program compiles unchanged with
// `#include <kiln/torch.h>` in place of `#include <torch/torch.h>`. Everything lives in namespace
// kiln; namespaces `torch` and `at` name it (below), and the few names libtorch keeps elsewhere
// (c10, caffe2) are declared where libtorch programs look for them.
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

// namespace torch (and at): libtorch's names for kiln's, in namespaces of their own, so that a
// program can reopen them (`namespace torch { ... }`, `namespace torch::nn { ... }`) as libtorch
// allows. Each top-level name is a using-declaration (torch_names.h): a using-directive would make
// kiln::nn visible beside torch::nn after `using namespace torch;`, and `nn::Linear` ambiguous.
// Each of kiln's namespaces has one in torch that names all of it.
#ifndef KILN_TORCH_NAMES_UNCHECKED  // defined by scripts/torch_names.py while it lists kiln's names
#define KILN_TORCH_NAME(name) using ::kiln::name;
#define KILN_TORCH_NAMESPACE(name) \
  namespace name {                 \
  using namespace ::kiln::name;    \
  }
// The elementwise ops of frontend/elementwise_ops.def are named from that table, so that a new
// one needs no line here.
#define KILN_UNARY(name) using ::kiln::name;
#define KILN_BINARY(name) using ::kiln::name;
namespace torch {
#include "frontend/elementwise_ops.def"
#include "kiln/torch_names.h"
namespace detail {
using ::kiln::detail::TensorDataContainer;
}  // namespace detail
}  // namespace torch
#undef KILN_TORCH_NAMESPACE
#define KILN_TORCH_NAMESPACE(name)
#define KILN_UNARY(name) using ::kiln::name;
#define KILN_BINARY(name) using ::kiln::name;
namespace at {
#include "frontend/elementwise_ops.def"
#include "kiln/torch_names.h"
namespace indexing {
using namespace ::kiln::indexing;
}  // namespace indexing
}  // namespace at
#undef KILN_TORCH_NAMESPACE
#undef KILN_TORCH_NAME
#endif

// The c10 names programs use. c10::Error is what libtorch throws; kiln throws kiln::Error, the
// same type.
namespace c10 {
using ::kiln::ArrayRef;
using ::kiln::BFloat16;
using ::kiln::Device;
using ::kiln::DeviceType;
using ::kiln::Error;
using ::kiln::Half;
using ::kiln::IntArrayRef;
using ::kiln::kBFloat16;
using ::kiln::kBool;
using ::kiln::kByte;
using ::kiln::kChar;
using ::kiln::kCPU;
using ::kiln::kCUDA;
using ::kiln::kDouble;
using ::kiln::kFloat;
using ::kiln::kFloat16;
using ::kiln::kFloat32;
using ::kiln::kFloat64;
using ::kiln::kHalf;
using ::kiln::kInt;
using ::kiln::kInt16;
using ::kiln::kInt32;
using ::kiln::kInt64;
using ::kiln::kInt8;
using ::kiln::kLong;
using ::kiln::kShort;
using ::kiln::kStrided;
using ::kiln::kUInt8;
using ::kiln::Layout;
using ::kiln::MemoryFormat;
using ::kiln::Scalar;
using ::kiln::ScalarType;
using ::kiln::TensorOptions;
using ::std::nullopt;
using ::std::nullopt_t;
using ::std::optional;

// for (auto i : c10::irange(n)): the integers [begin, end).
template <typename T>
class integer_range {
 public:
  struct iterator {
    T value;
    T operator*() const { return value; }
    iterator& operator++() { return ++value, *this; }
    bool operator!=(const iterator& o) const { return value != o.value; }
    bool operator==(const iterator& o) const { return value == o.value; }
  };
  integer_range(T begin, T end) : begin_{begin}, end_{end < begin ? begin : end} {}
  iterator begin() const { return begin_; }
  iterator end() const { return end_; }

 private:
  iterator begin_, end_;
};
template <typename T1, typename T2>
integer_range<std::common_type_t<T1, T2>> irange(T1 begin, T2 end) {
  return {std::common_type_t<T1, T2>(begin), std::common_type_t<T1, T2>(end)};
}
template <typename T>
integer_range<T> irange(T end) {
  return {T(0), end};
}
}  // namespace c10

namespace caffe2 {
using ::kiln::TypeMeta;
}  // namespace caffe2

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
