// Host buffers from a caching allocator: freed blocks are kept by size class and reused, so a
// training loop that allocates the same sizes every step stops calling malloc after the first.
#pragma once
#include <cstddef>
#include <memory>

namespace kiln {

class Buffer {
 public:
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <typename T> T* as() const { return static_cast<T*>(data_); }

 private:
  void* data_;
  size_t bytes_;
  size_t capacity_;
};
using BufferPtr = std::shared_ptr<Buffer>;

inline BufferPtr make_buffer(size_t bytes) { return std::make_shared<Buffer>(bytes); }

// Releases every cached block back to the system (tests and `kiln::empty_cache()`).
void empty_allocator_cache();

}  // namespace kiln
