// KILN_ARG: an option with a chainable setter and a getter, as libtorch's TORCH_ARG
// (`LinearOptions(3, 2).bias(false)`, `opts.bias()`).
#pragma once
#include <utility>

#define KILN_ARG(T, name)                                         \
 public:                                                          \
  inline auto name(const T& new_##name)->decltype(*this) {        \
    this->name##_ = new_##name;                                   \
    return *this;                                                 \
  }                                                               \
  inline auto name(T&& new_##name)->decltype(*this) {             \
    this->name##_ = std::move(new_##name);                        \
    return *this;                                                 \
  }                                                               \
  inline const T& name() const noexcept { return this->name##_; } \
  inline T& name() noexcept { return this->name##_; }             \
                                                                  \
 private:                                                         \
  T name##_
