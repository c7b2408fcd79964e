// Shapes, strides and the small helpers every stage uses on them.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "runtime/error.h"

namespace kiln {

using Shape = std::vector<int64_t>;
inline constexpr int kMaxDims = 8;

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// A non-owning view of sizes, as libtorch's IntArrayRef: built from a vector, a braced list or one
// integer. It does not own its data, so it is only for arguments and immediate use.
class IntArrayRef {
 public:
  IntArrayRef() = default;
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // by design, as libtorch's: arguments only
  IntArrayRef(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}
  IntArrayRef(const int64_t* d, size_t n) : data_(d), size_(n) {}
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  operator std::vector<int64_t>() const { return vec(); }
  bool operator==(const IntArrayRef& o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != o.data_[i]) return false;
    return true;
  }
  bool operator!=(const IntArrayRef& o) const { return !(*this == o); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};
inline std::ostream& operator<<(std::ostream& os, IntArrayRef s) { return os << s.vec(); }

}  // namespace kiln
