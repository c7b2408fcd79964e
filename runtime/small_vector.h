// A vector that keeps its first N elements inline and moves to the heap only beyond them: the
// short lists every traced op makes (an autograd node's edges and output descriptions) cost no
// allocation. Reads and grows as a std::vector.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

namespace kiln::detail {

template <class T, size_t N>
class SmallVector {
  static_assert(N > 0, "a SmallVector keeps at least one element inline");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  SmallVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { take(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      assign(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> l) {
    clear();
    assign(l.begin(), l.end());
    return *this;
  }
  ~SmallVector() {
    clear();
    release();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& at(size_t i) { return data_[checked(i)]; }
  const T& at(size_t i) const { return data_[checked(i)]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      // Made before growing: `args` may name an element the growth moves (v.push_back(v[0])).
      T value(std::forward<Args>(args)...);
      grow(2 * capacity_);
      return *new (data_ + size_++) T(std::move(value));
    }
    T* p = new (data_ + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void pop_back() { data_[--size_].~T(); }
  void resize(size_t n) {
    reserve(n);
    while (size_ < n) emplace_back();
    while (size_ > n) pop_back();
  }
  void clear() {
    std::destroy(data_, data_ + size_);
    size_ = 0;
  }

 private:
  T* inline_data() { return reinterpret_cast<T*>(inline_); }
  size_t checked(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return i;
  }
  template <class It>
  void assign(It first, It last) {
    reserve(size_t(last - first));
    for (; first != last; ++first) emplace_back(*first);
  }
  void grow(size_t n) {
    T* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    std::uninitialized_move(data_, data_ + size_, p);
    std::destroy(data_, data_ + size_);
    release();
    data_ = p;
    capacity_ = n;
  }
  // Frees the heap block, if any (its elements already destroyed or moved).
  void release() {
    if (data_ != inline_data()) ::operator delete(data_, std::align_val_t(alignof(T)));
    data_ = inline_data();
    capacity_ = N;
  }
  // Takes o's elements (o is left empty and inline).
  void take(SmallVector& o) {
    if (o.data_ != o.inline_data()) {
      data_ = o.data_;
      capacity_ = o.capacity_;
      size_ = o.size_;
      o.data_ = o.inline_data();
      o.capacity_ = N;
      o.size_ = 0;
      return;
    }
    std::uninitialized_move(o.data_, o.data_ + o.size_, data_);
    size_ = o.size_;
    o.clear();
  }

  T* data_ = inline_data();
  size_t size_ = 0, capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

}  // namespace kiln::detail
