// The device half of the CUDA backend, on a machine without a GPU: the driver opened with dlopen
// (and why it is not available), the caching allocators' logic over a fake backing memory, and
// the frontend's devices.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cstdlib>
#include <map>

#include "expect_error.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"

namespace {

using kiln::cuda::CachingAllocator;

// Host memory with a capacity, counting what it hands out.
class FakeMemory : public kiln::cuda::RawMemory {
 public:
  explicit FakeMemory(size_t capacity) : capacity_(capacity) {}
  ~FakeMemory() override { EXPECT_EQ(*live_, 0u) << "segments not released"; }
  void* allocate(size_t bytes) override {
    if (*used_ + bytes > capacity_) return nullptr;
    *used_ += bytes;
    ++*live_;
    return std::malloc(bytes);
  }
  void release(void* memory, size_t bytes) override {
    *used_ -= bytes;
    --*live_;
    std::free(memory);
  }
  std::string capacity() const override { return "the fake has " + std::to_string(capacity_) + " bytes"; }
  // Shared with the test, which outlives no allocator's use of them.
  std::shared_ptr<size_t> used_ = std::make_shared<size_t>(0), live_ = std::make_shared<size_t>(0);

 private:
  size_t capacity_;
};

struct Fake {
  explicit Fake(size_t capacity = size_t(1) << 30) {
    auto memory = std::make_unique<FakeMemory>(capacity);
    used = memory->used_;
    allocator = std::make_unique<CachingAllocator>(std::move(memory), "fake:0");
  }
  std::shared_ptr<size_t> used;
  std::unique_ptr<CachingAllocator> allocator;
};

constexpr size_t kMiB = 1 << 20;

bool driver_library_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}

}  // namespace

TEST(CudaDevice, DriverIsNotAvailableWithoutLibcudaAndSaysWhy) {
  if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  EXPECT_FALSE(kiln::cuda_driver::available());
  EXPECT_EQ(kiln::cuda_driver::unavailable_reason(), "libcuda.so.1 not found: no NVIDIA driver on this machine");
  EXPECT_EQ(kiln::cuda_driver::device_count(), 0);
  EXPECT_THROW_WITH(kiln::cuda_driver::api(), "CUDA is not available: libcuda.so.1 not found");
  EXPECT_THROW_WITH(kiln::cuda_driver::device_properties(0), "CUDA device 0 does not exist (0 device(s): libcuda.so.1");
  EXPECT_THROW_WITH(kiln::cuda_driver::set_device(0), "no NVIDIA driver");
  EXPECT_THROW_WITH(kiln::cuda::device_allocator(0), "CUDA is not available: libcuda.so.1 not found");
  EXPECT_THROW_WITH(kiln::cuda::pinned_allocator(), "CUDA is not available");
  // The figures of a device nothing was allocated on are 0, as torch.cuda's.
  EXPECT_EQ(kiln::cuda::memory_allocated(), 0u);
  EXPECT_EQ(kiln::cuda::memory_reserved(), 0u);
  EXPECT_EQ(kiln::cuda::max_memory_allocated(), 0u);
  kiln::cuda::reset_peak_memory_stats();
  kiln::cuda::empty_cache();
}

TEST(CudaDevice, DriverErrorsNameTheCall) {
  EXPECT_NO_THROW(kiln::cuda_driver::check(kiln::cuda_driver::CUDA_SUCCESS, "cuInit"));
  EXPECT_THROW_WITH(kiln::cuda_driver::check(kiln::cuda_driver::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"),
                    "cuMemAlloc: ");
  if (!kiln::cuda_driver::available()) {  // no driver to ask for the message: the code is named
    EXPECT_EQ(kiln::cuda_driver::error_text("cuMemAlloc", 2), "cuMemAlloc: unknown error (CUresult 2)");
  } else {
    EXPECT_EQ(kiln::cuda_driver::error_text("cuMemAlloc", 2), "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
  }
}

TEST(CudaDevice, AllocatorRoundsToBlocksAndPicksThePool) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  Fake f;
  void* a = f.allocator->allocate(100);
  // A small request takes a 2 MiB segment of the small pool.
  EXPECT_EQ(f.allocator->stats().reserved, 2 * kMiB);
  EXPECT_EQ(f.allocator->stats().allocated, 512u);
  void* b = f.allocator->allocate(1000);  // carved from the same segment, after the first block
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 512);
  EXPECT_EQ(f.allocator->stats().segments, 1u);
  // A large one under 10 MiB takes a 20 MiB segment, and the rest stays for the next.
  void* c = f.allocator->allocate(3 * kMiB);
  EXPECT_EQ(f.allocator->stats().reserved, 22 * kMiB);
  void* d = f.allocator->allocate(4 * kMiB);
  EXPECT_EQ(static_cast<char*>(d), static_cast<char*>(c) + 3 * kMiB);
  EXPECT_EQ(f.allocator->stats().segments, 2u);
  // From 10 MiB on, a segment of the request's size rounded to 2 MiB (13 MiB are left above d).
  void* e = f.allocator->allocate(13 * kMiB + 1);
  EXPECT_EQ(f.allocator->stats().reserved, 36 * kMiB);
  // The last 1 MiB - 512 of e's segment is too little to split off a large block: e has it all.
  EXPECT_EQ(f.allocator->stats().allocated, 512u + 1024u + 7 * kMiB + 14 * kMiB);
  for (void* p : {a, b, c, d, e}) f.allocator->free(p);
  EXPECT_EQ(f.allocator->stats().allocated, 0u);
  EXPECT_EQ(f.allocator->stats().reserved, 36 * kMiB);  // cached
}

TEST(CudaDevice, AllocatorReusesFreedBlocksWithoutTheDriver) {
  Fake f;
  std::vector<void*> first;
  for (size_t bytes : {4096u, 300000u, 5u << 20, 12u << 20}) first.push_back(f.allocator->allocate(bytes));
  const size_t raw = f.allocator->stats().raw_allocations;
  for (void* p : first) f.allocator->free(p);
  // A training loop's next step asks for the same sizes: the same blocks, no new segment.
  for (int step = 0; step < 5; ++step) {
    std::vector<void*> again;
    for (size_t bytes : {4096u, 300000u, 5u << 20, 12u << 20}) again.push_back(f.allocator->allocate(bytes));
    EXPECT_EQ(again, first);
    for (void* p : again) f.allocator->free(p);
  }
  EXPECT_EQ(f.allocator->stats().raw_allocations, raw);
  // Freed neighbours merge back: the whole small segment serves a 1 MiB request again.
  void* whole = f.allocator->allocate(kMiB);
  EXPECT_EQ(whole, first[0]);
  f.allocator->free(whole);
}

TEST(CudaDevice, AllocatorCountsPeaksAndEmptiesItsCache) {
  Fake f;
  void* a = f.allocator->allocate(3 * kMiB);
  void* b = f.allocator->allocate(5 * kMiB);
  f.allocator->free(a);
  EXPECT_EQ(f.allocator->stats().allocated, 5 * kMiB);
  EXPECT_EQ(f.allocator->stats().peak_allocated, 8 * kMiB);
  f.allocator->reset_peak_stats();
  EXPECT_EQ(f.allocator->stats().peak_allocated, 5 * kMiB);
  f.allocator->empty_cache();  // b's segment is in use: it stays
  EXPECT_EQ(f.allocator->stats().reserved, 20 * kMiB);
  f.allocator->free(b);
  f.allocator->empty_cache();
  EXPECT_EQ(f.allocator->stats().reserved, 0u);
  EXPECT_EQ(*f.used, 0u);
  EXPECT_EQ(f.allocator->stats().peak_reserved, 20 * kMiB);
  EXPECT_THROW_WITH(f.allocator->free(&f), "fake:0: free of a pointer this allocator did not hand out");
}

TEST(CudaDevice, AllocatorEmptiesItsCacheAndRetriesWhenOutOfMemory) {
  Fake f(40 * kMiB);
  void* a = f.allocator->allocate(12 * kMiB);
  void* b = f.allocator->allocate(14 * kMiB);
  f.allocator->free(a);
  f.allocator->free(b);
  // 26 MiB cached; 30 MiB more does not fit beside them, but does once they are given back.
  void* c = f.allocator->allocate(30 * kMiB);
  EXPECT_EQ(f.allocator->stats().cache_flushes, 1u);
  EXPECT_EQ(f.allocator->stats().reserved, 30 * kMiB);
  f.allocator->free(c);
}

TEST(CudaDevice, OutOfMemoryNamesTheSizesAndLeavesTheAllocatorUsable) {
  Fake f(40 * kMiB);
  void* a = f.allocator->allocate(24 * kMiB);
  try {
    f.allocator->allocate(20 * kMiB);
    ADD_FAILURE() << "expected out of memory";
  } catch (const kiln::Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("fake:0: out of memory. Tried to allocate 20.00 MiB (20971520 bytes"), std::string::npos)
        << text;
    EXPECT_NE(text.find("24.00 MiB allocated by kiln and 24.00 MiB reserved by kiln"), std::string::npos) << text;
    EXPECT_NE(text.find("the fake has 41943040 bytes"), std::string::npos) << text;
  }
  EXPECT_EQ(f.allocator->stats().allocated, 24 * kMiB);
  void* b = f.allocator->allocate(10 * kMiB);  // what fits still comes
  f.allocator->free(a);
  f.allocator->free(b);
  void* c = f.allocator->allocate(20 * kMiB);  // and the failed size once memory is free
  f.allocator->free(c);
}

TEST(CudaDevice, StagingBlocksReturnOnlyOnceTheirCopyIsDone) {
  Fake f;
  void* a = f.allocator->allocate(4096);
  bool copied = false;
  f.allocator->free_when(a, [&] { return copied; });
  void* b = f.allocator->allocate(4096);
  EXPECT_NE(a, b);  // a's copy may still read it
  EXPECT_EQ(f.allocator->stats().allocated, 8192u);
  copied = true;
  void* c = f.allocator->allocate(4096);
  EXPECT_EQ(c, a);
  f.allocator->free(b);
  f.allocator->free(c);
}
