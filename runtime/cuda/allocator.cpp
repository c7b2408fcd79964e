#include "runtime/cuda/allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "runtime/cuda/driver.h"
#include "runtime/error.h"

namespace kiln::cuda {
namespace {

using namespace cuda_driver;  // CUresult, api(), check, set_device

std::string mib(size_t bytes) {
  char text[64];
  if (bytes >= (size_t(1) << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(size_t(1) << 30));
  else
    std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1 << 20));
  return text;
}

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

}  // namespace

CachingAllocator::CachingAllocator(std::unique_ptr<RawMemory> raw, std::string where)
    : raw_(std::move(raw)), where_(std::move(where)) {}

CachingAllocator::~CachingAllocator() {
  // Every segment, in use or not: its first block walks it; the blocks die with it.
  std::vector<Block*> firsts;
  for (Pool* pool : {&small_, &large_})
    for (Block* b : *pool)
      if (!b->prev) firsts.push_back(b);
  for (auto& [ptr, b] : in_use_)
    if (!b->prev) firsts.push_back(b);
  for (Block* first : firsts) {
    void* segment = first->ptr;
    size_t bytes = 0;
    for (Block* b = first; b;) {
      Block* next = b->next;
      bytes += b->size;
      delete b;
      b = next;
    }
    raw_->release(segment, bytes);
  }
}

size_t CachingAllocator::round_size(size_t bytes) { return bytes < kMinBlock ? kMinBlock : round_up(bytes, kMinBlock); }

void* CachingAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  std::lock_guard<std::mutex> lock(mutex_);
  poll_deferred(false);
  Pool& pool = small ? small_ : large_;
  Block* block = find_free(pool, size);
  if (!block) {
    const size_t segment = small ? kSmallSegment : size < kMinLargeAlloc ? kLargeSegment : round_up(size, kRoundLarge);
    block = new_segment(segment, small);
    if (!block) {  // the driver has none left: give back what the cache holds, and try once more
      ++stats_.cache_flushes;
      poll_deferred(true);
      release_free_segments();
      block = new_segment(segment, small);
      if (!block) out_of_memory(bytes, segment);
    }
  } else {
    pool.erase(block);
  }
  block = split(block, size);
  block->allocated = true;
  in_use_.emplace(block->ptr, block);
  stats_.allocated += block->size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return block->ptr;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t size) {
  Block key{nullptr, size, false};
  auto it = pool.lower_bound(&key);
  return it == pool.end() ? nullptr : *it;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, bool small) {
  void* memory = raw_->allocate(size);
  if (!memory) return nullptr;
  ++stats_.raw_allocations;
  ++stats_.segments;
  stats_.reserved += size;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  return new Block{static_cast<char*>(memory), size, small};
}

// Cuts `block` (free, in no pool) to `size`, returning the rest to its pool when it is worth
// keeping: any 512 bytes in the small pool, more than a small request in the large one (as
// PyTorch, so that large segments are not whittled into small blocks).
CachingAllocator::Block* CachingAllocator::split(Block* block, size_t size) {
  const size_t rest = block->size - size;
  if (block->small ? rest < kMinBlock : rest <= kSmallSize) return block;
  Block* remaining = new Block{block->ptr + size, rest, block->small};
  remaining->prev = block;
  remaining->next = block->next;
  if (block->next) block->next->prev = remaining;
  block->next = remaining;
  block->size = size;
  (block->small ? small_ : large_).insert(remaining);
  return block;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(ptr);
  KILN_CHECK(it != in_use_.end(), where_, ": free of a pointer this allocator did not hand out");
  Block* block = it->second;
  in_use_.erase(it);
  free_locked(block);
}

void CachingAllocator::free_locked(Block* block) {
  stats_.allocated -= block->size;
  block->allocated = false;
  Pool& pool = block->small ? small_ : large_;
  if (Block* prev = block->prev; prev && !prev->allocated) {  // merge into the free block before
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; next && !next->allocated) {  // and absorb the one after
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

void CachingAllocator::free_when(void* ptr, std::function<bool()> done) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_CHECK(in_use_.count(ptr), where_, ": free of a pointer this allocator did not hand out");
  deferred_.emplace_back(ptr, std::move(done));
}

// Frees the deferred blocks whose work has finished; with `wait_all`, waits for each (polling).
void CachingAllocator::poll_deferred(bool wait_all) {
  for (size_t i = 0; i < deferred_.size();) {
    auto& [ptr, done] = deferred_[i];
    bool finished = done();
    while (wait_all && !finished) finished = done();
    if (!finished) {
      ++i;
      continue;
    }
    auto it = in_use_.find(ptr);
    Block* block = it->second;
    in_use_.erase(it);
    free_locked(block);
    deferred_[i] = std::move(deferred_.back());
    deferred_.pop_back();
  }
}

void CachingAllocator::release_free_segments() {
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      it = pool->erase(it);
      raw_->release(b->ptr, b->size);
      stats_.reserved -= b->size;
      --stats_.segments;
      delete b;
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  poll_deferred(false);
  release_free_segments();
}

void CachingAllocator::out_of_memory(size_t bytes, size_t segment) {
  const std::string capacity = raw_->capacity();
  throw Error(detail::concat(where_, ": out of memory. Tried to allocate ", mib(bytes), " (", bytes,
                             " bytes, a segment of ", mib(segment), "); ", mib(stats_.allocated),
                             " allocated by kiln and ", mib(stats_.reserved), " reserved by kiln",
                             capacity.empty() ? "" : "; " + capacity, ". Free tensors, or use smaller batches."));
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

// --- the driver's memory ---

namespace {

class DeviceMemory : public RawMemory {
 public:
  explicit DeviceMemory(int index) : index_(index) {}
  void* allocate(size_t bytes) override {
    set_device(index_);
    CUdeviceptr ptr = 0;
    const CUresult r = api().cuMemAlloc(&ptr, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr));
  }
  void release(void* memory, size_t) override {
    set_device(index_);
    before_free();
    KILN_CU(cuMemFree, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(memory)));
  }
  std::string capacity() const override {
    size_t free = 0, total = 0;
    set_device(index_);
    if (api().cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return "";
    return detail::concat("the device has ", mib(total), " in all, of which ", mib(free), " is free");
  }

 private:
  int index_;
};

class PinnedHostMemory : public RawMemory {
 public:
  void* allocate(size_t bytes) override {
    if (device_count() > 0) set_device(0);  // a context must be current; portable pins it for all
    void* ptr = nullptr;
    const CUresult r = api().cuMemHostAlloc(&ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemHostAlloc");
    return ptr;
  }
  void release(void* memory, size_t) override { KILN_CU(cuMemFreeHost, memory); }
};

// The fake device's memory (use_fake_device).
class HostMemory : public RawMemory {
 public:
  void* allocate(size_t bytes) override { return std::malloc(bytes); }
  void release(void* memory, size_t) override { std::free(memory); }
};

// The fake device's memory: its driver table's cuMemAlloc (a test's table, which lives as long as
// the process, so blocks freed after the fake is turned off still go back to it). The test's
// driver keeps that memory out of the host's reach between driver calls.
class FakeDeviceMemory : public RawMemory {
 public:
  void* allocate(size_t bytes) override {
    CUdeviceptr ptr = 0;
    const CUresult r = fake_->cuMemAlloc(&ptr, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr));
  }
  void release(void* memory, size_t) override {
    before_free();
    check(fake_->cuMemFree(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(memory))), "cuMemFree");
  }

 private:
  const DriverApi* fake_ = &api();
};

struct Allocators {
  std::mutex mutex;
  std::vector<std::unique_ptr<CachingAllocator>> devices;
  std::unique_ptr<CachingAllocator> pinned;
  std::unique_ptr<CachingAllocator> fake;         // cuda:0 while the fake device is on
  std::unique_ptr<CachingAllocator> fake_pinned;  // its staging memory (host memory too)
};
// Never destroyed: device memory outlives static destructors that may still free tensors.
Allocators& allocators() {
  static auto* a = new Allocators;
  return *a;
}

// Device `index`'s allocator if it was made, else null.
CachingAllocator* existing(int index) {
  Allocators& a = allocators();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (fake_device()) return index == 0 ? a.fake.get() : nullptr;
  return index >= 0 && size_t(index) < a.devices.size() ? a.devices[size_t(index)].get() : nullptr;
}

void require_available() { KILN_CHECK(available(), "CUDA is not available: ", unavailable_reason()); }

}  // namespace

CachingAllocator& device_allocator(int index) {
  require_available();
  KILN_CHECK(index >= 0 && index < device_count(), "CUDA device ", index, " does not exist (", device_count(),
             " device(s))");
  Allocators& a = allocators();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (fake_device()) {
    if (!a.fake) a.fake = std::make_unique<CachingAllocator>(std::make_unique<FakeDeviceMemory>(), "cuda:0 (fake)");
    return *a.fake;
  }
  if (a.devices.size() <= size_t(index)) a.devices.resize(size_t(index) + 1);
  auto& slot = a.devices[size_t(index)];
  if (!slot)
    slot = std::make_unique<CachingAllocator>(std::make_unique<DeviceMemory>(index), "cuda:" + std::to_string(index));
  return *slot;
}

CachingAllocator& pinned_allocator() {
  api();
  Allocators& a = allocators();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (fake_device()) {  // plain host memory, which outlives the fake driver's table
    if (!a.fake_pinned)
      a.fake_pinned = std::make_unique<CachingAllocator>(std::make_unique<HostMemory>(), "pinned host memory (fake)");
    return *a.fake_pinned;
  }
  if (!a.pinned)
    a.pinned = std::make_unique<CachingAllocator>(std::make_unique<PinnedHostMemory>(), "pinned host memory");
  return *a.pinned;
}

namespace {
size_t figure(int index, size_t MemoryStats::*field) {
  CachingAllocator* a = existing(index);
  return a ? a->stats().*field : 0;
}
}  // namespace

size_t memory_allocated(int index) { return figure(index, &MemoryStats::allocated); }
size_t memory_reserved(int index) { return figure(index, &MemoryStats::reserved); }
size_t max_memory_allocated(int index) { return figure(index, &MemoryStats::peak_allocated); }
size_t max_memory_reserved(int index) { return figure(index, &MemoryStats::peak_reserved); }
void reset_peak_memory_stats(int index) {
  if (CachingAllocator* a = existing(index)) a->reset_peak_stats();
}

void empty_cache() {
  Allocators& a = allocators();
  std::vector<CachingAllocator*> all;
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    for (auto& d : a.devices)
      if (d) all.push_back(d.get());
    if (a.pinned) all.push_back(a.pinned.get());
    if (a.fake) all.push_back(a.fake.get());
    if (a.fake_pinned) all.push_back(a.fake_pinned.get());
  }
  for (CachingAllocator* c : all) c->empty_cache();
}

}  // namespace kiln::cuda
