// Host buffers from a caching allocator: freed blocks are kept by size class and reused, so a
// training loop that allocates the same sizes every step stops calling malloc after the first.
// A buffer may instead borrow the caller's memory (from_blob).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

namespace kiln {

class Buffer {
 public:
  explicit Buffer(size_t bytes);
  // The caller's memory, never freed here: `release` (may be empty) is called once the buffer
  // gives it back (give_back, or when the buffer dies).
  Buffer(void* memory, size_t bytes, std::function<void(void*)> release);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  bool borrowed() const { return borrowed_; }
  // Stops using the caller's memory: its bytes are copied into memory of the buffer's own first,
  // so that whoever holds the buffer still reads them, and then it is released.
  void give_back();
  // Where data() points: -1 for host memory, else into the memory of that CUDA device (a device
  // pointer, codegen/cuda/launcher.h); only host memory may be read through data() on the host.
  int cuda_device() const { return cuda_device_; }
  void set_cuda_device(int device) { cuda_device_ = device; }

 private:
  void* data_;
  size_t bytes_;
  size_t capacity_;
  bool borrowed_ = false;
  int cuda_device_ = -1;
  std::function<void(void*)> release_;
};
using BufferPtr = std::shared_ptr<Buffer>;

inline BufferPtr make_buffer(size_t bytes) { return std::make_shared<Buffer>(bytes); }

// Releases every cached block back to the system (tests and `kiln::empty_cache()`).
void empty_allocator_cache();

}  // namespace kiln
