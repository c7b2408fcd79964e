#include "runtime/buffer.h"

#include <sanitizer/asan_interface.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/stats.h"

namespace kiln {
namespace {

// Blocks are rounded up to a size class (64-byte granules below 4 KiB, then powers of two split
// into quarters) so that near sizes share blocks. Alignment is 64 bytes for vector loads.
size_t size_class(size_t bytes) {
  if (bytes <= 4096) return ((bytes + 63) / 64) * 64 + (bytes == 0 ? 64 : 0);
  size_t p = 4096;
  while (p < bytes) p <<= 1;
  size_t quarter = p / 8;  // classes at 5/8, 6/8, 7/8 and 8/8 of the power of two
  size_t c = p / 2;
  while (c < bytes) c += quarter;
  return c;
}

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;
  size_t cached_bytes = 0;
  static constexpr size_t kMaxCachedBytes = size_t(4) << 30;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: buffers may die after static destruction
  return *c;
}

// Under AddressSanitizer a cached block is poisoned, and so is a block's tail past the bytes
// asked for, so that kiln's code reading a freed buffer or past a buffer's end is reported as it
// would be for malloc's blocks (a block reused at once, or rounded up, would hide it). Elsewhere
// these are no-ops.
void poison(void* block, size_t bytes) { ASAN_POISON_MEMORY_REGION(block, bytes); }
void unpoison(void* block, size_t bytes) { ASAN_UNPOISON_MEMORY_REGION(block, bytes); }

// A block of `capacity` bytes (a size class) for a buffer of `bytes`.
void* allocate(size_t capacity, size_t bytes) {
  auto& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    // The block freed last, still warm in cache: a training step reuses its buffers in turn.
    auto [first, last] = c.free_blocks.equal_range(capacity);
    if (first != last) {
      auto it = std::prev(last);
      void* block = it->second;
      c.free_blocks.erase(it);
      c.cached_bytes -= capacity;
      stats_add(&Stats::allocator_hits, 1);
      unpoison(block, bytes);
      return block;
    }
  }
  void* block = std::aligned_alloc(64, capacity);
  KILN_CHECK(block, "allocator: out of memory allocating ", bytes, " bytes");
  stats_add(&Stats::allocator_mallocs, 1);
  poison(static_cast<char*>(block) + bytes, capacity - bytes);
  return block;
}

}  // namespace

Buffer::Buffer(size_t bytes) : data_(allocate(size_class(bytes), bytes)), bytes_(bytes), capacity_(size_class(bytes)) {}

Buffer::Buffer(void* memory, size_t bytes, std::function<void(void*)> release)
    : data_(memory), bytes_(bytes), capacity_(0), borrowed_(true), release_(std::move(release)) {}

void Buffer::give_back() {
  if (!borrowed_) return;
  void* memory = data_;
  capacity_ = size_class(bytes_);
  data_ = allocate(capacity_, bytes_);
  if (bytes_ > 0) std::memcpy(data_, memory, bytes_);
  borrowed_ = false;
  if (release_) std::exchange(release_, nullptr)(memory);
}

Buffer::~Buffer() {
  if (borrowed_) {
    if (release_) release_(data_);
    return;
  }
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.cached_bytes + capacity_ > Cache::kMaxCachedBytes) {
    unpoison(data_, capacity_);
    std::free(data_);
    return;
  }
  poison(data_, capacity_);
  c.free_blocks.emplace(capacity_, data_);
  c.cached_bytes += capacity_;
}

void empty_allocator_cache() {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, ptr] : c.free_blocks) {
    unpoison(ptr, size);
    std::free(ptr);
  }
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

}  // namespace kiln
