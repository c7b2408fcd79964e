// The libtorch vocabulary the data API's signatures use: ArrayRef<T> (a non-owning view of a
// contiguous list, as c10::ArrayRef) and optional / nullopt (torch::optional is std::optional's
// name in libtorch programs: `torch::optional<size_t> size() const override`).
#pragma once
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <vector>

namespace kiln {

using std::nullopt;
using std::optional;

// Built from a vector, a braced list, a pointer and a length, or one value. It does not own its
// data: for arguments and immediate use, as libtorch's.
template <typename T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  ArrayRef() = default;
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // by design, as libtorch's: arguments only
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  ArrayRef(const T& one) : data_(&one), size_(1) {}
  ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  ArrayRef(const T* begin, const T* end) : data_(begin), size_(size_t(end - begin)) {}

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  ArrayRef slice(size_t start, size_t length) const { return ArrayRef(data_ + start, length); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln
