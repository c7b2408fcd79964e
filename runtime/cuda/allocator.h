// Caching allocators for CUDA device memory and pinned host staging memory, as PyTorch's: memory
// is taken from the driver in segments and handed out in blocks, rounded to 512 bytes; a freed
// block is kept in its pool (small: up to 1 MiB, carved from 2 MiB segments; large: the rest),
// split to fit a smaller request and merged with free neighbours, so that a training loop that
// allocates the same sizes every step stops calling the driver after its first. When the driver
// has no memory left, the cached free segments are given back and the request retried once; then
// out of memory is a kiln::Error with the size asked, allocated and reserved, and the allocator
// stays usable.
//
// The caching logic is over RawMemory, so tests run it on a fake with a capacity.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::cuda {

// Where a caching allocator's segments come from (cuMemAlloc, cuMemHostAlloc, or a test's fake).
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // `bytes` of new memory, or null when there is none left; any other failure throws.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* memory, size_t bytes) = 0;
  // For an out-of-memory message: what the memory holds ("total 79.1 GiB, 0.2 GiB free"), or "".
  virtual std::string capacity() const { return ""; }
};

struct MemoryStats {
  size_t allocated = 0;  // bytes in blocks handed out (rounded sizes)
  size_t reserved = 0;   // bytes in segments taken from the RawMemory
  size_t peak_allocated = 0;
  size_t peak_reserved = 0;
  size_t segments = 0;         // segments held now
  size_t raw_allocations = 0;  // segments ever taken (a steady loop adds none)
  size_t cache_flushes = 0;    // times the cache was emptied to retry a failed allocation
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlock = 512;           // every block is a multiple of this
  static constexpr size_t kSmallSize = 1 << 20;      // largest request served from the small pool
  static constexpr size_t kSmallSegment = 2 << 20;   // segment size of the small pool
  static constexpr size_t kLargeSegment = 20 << 20;  // segment size for requests under kMinLargeAlloc
  static constexpr size_t kMinLargeAlloc = 10 << 20;
  static constexpr size_t kRoundLarge = 2 << 20;  // larger requests get a segment of their size, rounded so

  // `where` names the memory in messages ("cuda:0", "pinned host memory").
  CachingAllocator(std::unique_ptr<RawMemory> raw, std::string where);
  ~CachingAllocator();  // releases every segment
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (a 0-byte request gets a minimal block); throws kiln::Error when
  // out of memory even after emptying the cache.
  void* allocate(size_t bytes);
  // Returns a block from allocate to its pool; null is ignored.
  void free(void* block);
  // Returns the block once `done()` says the work reading it (an asynchronous copy from a pinned
  // staging buffer, say) has finished: polled at each allocate, and before retrying one.
  void free_when(void* block, std::function<bool()> done);
  // Gives every wholly free segment back to the RawMemory.
  void empty_cache();
  MemoryStats stats() const;
  void reset_peak_stats();  // the peaks become the current figures
  // The size that allocate(bytes) hands out.
  static size_t round_size(size_t bytes);
  const std::string& where() const { return where_; }

 private:
  struct Block {
    char* ptr;
    size_t size;
    bool small;  // its pool
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySizeThenAddress>;

  Block* find_free(Pool& pool, size_t size);
  Block* new_segment(size_t size, bool small);
  Block* split(Block* block, size_t size);
  void free_locked(Block* block);
  void release_free_segments();
  void poll_deferred(bool wait_all);
  [[noreturn]] void out_of_memory(size_t bytes, size_t segment);

  std::unique_ptr<RawMemory> raw_;
  std::string where_;
  mutable std::mutex mutex_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> in_use_;
  std::vector<std::pair<void*, std::function<bool()>>> deferred_;
  MemoryStats stats_;
};

// The allocator of CUDA device `index`'s memory (cuMemAlloc in its primary context), made at
// first use; throws kiln::Error saying why where CUDA is not available.
CachingAllocator& device_allocator(int index);
// Page-locked host memory (cuMemHostAlloc) for staging host-to-device copies.
CachingAllocator& pinned_allocator();

// Device `index`'s figures, as torch.cuda's: 0 before anything was allocated there, and where
// CUDA is not available.
size_t memory_allocated(int index = 0);
size_t memory_reserved(int index = 0);
size_t max_memory_allocated(int index = 0);
size_t max_memory_reserved(int index = 0);
void reset_peak_memory_stats(int index = 0);
// Gives the cached free memory of every device and of the pinned pool back to the driver.
void empty_cache();

}  // namespace kiln::cuda
