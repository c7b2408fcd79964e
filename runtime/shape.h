// Shapes, strides and the small helpers every stage uses on them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <type_traits>
#include <vector>

#include "runtime/error.h"

namespace kiln {

inline constexpr int kMaxDims = 8;

// Sizes or strides of one tensor: at most kMaxDims numbers, kept inline. Every traced op makes a
// handful of these (its node's shape, its operands' views, its tensor's sizes and strides), so
// a heap allocation each was a large part of what an op cost. Reads as a std::vector<int64_t>
// and converts to and from one.
class Shape {
 public:
  using value_type = int64_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;

  Shape() = default;
  explicit Shape(size_t n, int64_t value = 0) : size_(check(n)) { std::fill(data_, data_ + n, value); }
  Shape(std::initializer_list<int64_t> l) : Shape(l.begin(), l.end()) {}
  Shape(const std::vector<int64_t>& v) : Shape(v.begin(), v.end()) {}
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  operator std::vector<int64_t>() const { return vec(); }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  std::reverse_iterator<const int64_t*> rbegin() const { return std::reverse_iterator<const int64_t*>(end()); }
  std::reverse_iterator<const int64_t*> rend() const { return std::reverse_iterator<const int64_t*>(begin()); }
  int64_t& operator[](size_t i) { return data_[i]; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t& front() { return data_[0]; }
  int64_t front() const { return data_[0]; }
  int64_t& back() { return data_[size_ - 1]; }
  int64_t back() const { return data_[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t) {}  // the capacity is kMaxDims; push_back and insert check it
  void resize(size_t n, int64_t value = 0) {
    check(n);
    if (n > size_) std::fill(data_ + size_, data_ + n, value);
    size_ = uint32_t(n);
  }
  void push_back(int64_t v) {
    check(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  int64_t* insert(const int64_t* pos, int64_t v) { return insert(pos, &v, &v + 1); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  int64_t* insert(const int64_t* pos, It first, It last) {
    const size_t at = size_t(pos - data_), n = size_t(std::distance(first, last));
    check(size_ + n);
    std::copy_backward(data_ + at, data_ + size_, data_ + size_ + n);
    std::copy(first, last, data_ + at);
    size_ += uint32_t(n);
    return data_ + at;
  }
  int64_t* insert(const int64_t* pos, std::initializer_list<int64_t> l) { return insert(pos, l.begin(), l.end()); }
  int64_t* erase(const int64_t* pos) { return erase(pos, pos + 1); }
  int64_t* erase(const int64_t* first, const int64_t* last) {
    const size_t at = size_t(first - data_), n = size_t(last - first);
    std::copy(data_ + at + n, data_ + size_, data_ + at);
    size_ -= uint32_t(n);
    return data_ + at;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  friend bool operator<(const Shape& a, const Shape& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  static uint32_t check(size_t n) {
    KILN_CHECK(n <= size_t(kMaxDims), "at most ", kMaxDims, " dimensions are supported, got ", n);
    return uint32_t(n);
  }
  uint32_t size_ = 0;
  int64_t data_[kMaxDims] = {};  // only the first size_ are read
};
inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.vec(); }

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
  IntArrayRef(const Shape& s) : data_(s.data()), size_(s.size()) {}
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
  operator Shape() const { return Shape(begin(), end()); }
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
