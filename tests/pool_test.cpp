// The pool of small blocks behind IR nodes and tensor handles: blocks are reused, may be freed on
// another thread than the one that made them, and stay valid while a thread exits. Under
// AddressSanitizer, what it and the buffer allocator keep is poisoned.
#include "runtime/pool.h"

#include <gtest/gtest.h>
#include <sanitizer/asan_interface.h>

#include <cstring>
#include <thread>
#include <vector>

#include "runtime/buffer.h"

namespace {

using kiln::pool::allocate;
using kiln::pool::deallocate;

TEST(Pool, BlocksAreReusedWithinAClass) {
  void* a = allocate(100);
  deallocate(a, 100);
  void* b = allocate(120);  // the same 128-byte class
  EXPECT_EQ(a, b);
  std::memset(b, 0xab, 128);  // a block has its class's full size
  deallocate(b, 120);
  void* big = allocate(1 << 20);  // past the largest class: malloc's
  std::memset(big, 1, 1 << 20);
  deallocate(big, 1 << 20);
}

TEST(Pool, BlocksMayBeFreedOnAnotherThread) {
  std::vector<void*> made;
  std::thread maker([&] {
    for (int i = 0; i < 1000; ++i) {
      made.push_back(allocate(64 + i % 512));
      std::memset(made.back(), i & 0xff, 64 + i % 512);
    }
  });
  maker.join();  // the maker's lists are gone; its blocks live on
  for (size_t i = 0; i < made.size(); ++i) deallocate(made[i], 64 + i % 512);
  // This thread's lists now hold them: taking them again gives usable blocks.
  std::vector<void*> again;
  for (int i = 0; i < 1000; ++i) {
    again.push_back(allocate(64 + i % 512));
    std::memset(again.back(), 0, 64 + i % 512);
  }
  for (size_t i = 0; i < again.size(); ++i) deallocate(again[i], 64 + i % 512);
}

TEST(Pool, SharedObjectsOutliveTheirThread) {
  std::shared_ptr<std::vector<int>> kept;
  std::thread t([&] {
    auto local = kiln::pool::make_shared<std::vector<int>>(100, 7);
    kept = local;
  });
  t.join();
  ASSERT_EQ(kept->size(), 100u);
  EXPECT_EQ((*kept)[99], 7);
  kept.reset();  // freed here, into this thread's list
}

// A block waiting in a list is poisoned until it is handed out again (scripts/sanitize.sh).
TEST(Pool, WaitingBlocksArePoisonedUnderAddressSanitizer) {
#ifndef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "not an AddressSanitizer build";
#else
  void* a = allocate(100);
  EXPECT_EQ(__asan_region_is_poisoned(a, 128), nullptr);
  deallocate(a, 100);
  EXPECT_EQ(__asan_region_is_poisoned(a, 128), a);
  void* b = allocate(120);  // the same block
  ASSERT_EQ(b, a);
  EXPECT_EQ(__asan_region_is_poisoned(b, 128), nullptr);
  deallocate(b, 120);
#endif
}

// The buffer allocator's cached blocks are poisoned, and so is a block's tail past the bytes
// asked for.
TEST(Pool, CachedBuffersAndTailsArePoisonedUnderAddressSanitizer) {
#ifndef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "not an AddressSanitizer build";
#else
  char* data;
  {
    kiln::Buffer b(100);  // a 128-byte block
    data = b.as<char>();
    EXPECT_EQ(__asan_region_is_poisoned(data, 100), nullptr);
    EXPECT_EQ(__asan_region_is_poisoned(data, 128), data + 100);
  }
  EXPECT_EQ(__asan_region_is_poisoned(data, 128), data);
  kiln::Buffer again(120);  // the same block
  ASSERT_EQ(again.as<char>(), data);
  EXPECT_EQ(__asan_region_is_poisoned(data, 120), nullptr);
  EXPECT_EQ(__asan_region_is_poisoned(data, 128), data + 120);
#endif
}

}  // namespace
