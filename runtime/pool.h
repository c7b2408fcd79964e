// Recycled blocks for the small objects every traced op makes: its IR node, its operand list, its
// tensor handle and its storage. Each size class keeps a per-thread free list, so a tiny op costs a
// few pointer moves instead of a malloc and a free, and the thousands of nodes a flush frees are
// not handed back to the system only for the next step to fault them in again.
#pragma once
#include <cstddef>
#include <memory>

namespace kiln::pool {

// Blocks of up to kLargest bytes come from the calling thread's lists; larger ones from malloc.
// A block freed on another thread joins that thread's list. A list keeps at most a bounded number
// of blocks (a few MB in all) and returns the rest to malloc.
void* allocate(size_t bytes);
void deallocate(void* p, size_t bytes) noexcept;

// A standard allocator over the pool, for std::allocate_shared and containers.
template <class T>
struct Allocator {
  using value_type = T;
  Allocator() = default;
  template <class U>
  Allocator(const Allocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(pool::allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const Allocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const Allocator<U>&) const {
    return false;
  }
};

template <class T, class... Args>
std::shared_ptr<T> make_shared(Args&&... args) {
  return std::allocate_shared<T>(Allocator<T>(), std::forward<Args>(args)...);
}

}  // namespace kiln::pool
