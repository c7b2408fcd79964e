#include "runtime/pool.h"

#include <sanitizer/asan_interface.h>

#include <cstdlib>
#include <new>

namespace kiln::pool {
namespace {

constexpr size_t kGranule = 64;  // classes of 64, 128, ... bytes
constexpr size_t kClasses = 16;  // up to kLargest
constexpr size_t kLargest = kGranule * kClasses;
constexpr size_t kMaxBytesPerClass = 4u << 20;  // what one list keeps at most

// Under AddressSanitizer a block waiting in a list is poisoned, its link included (unpoisoned
// around each use), so that a use after free in kiln's code is reported as it would be for
// malloc's blocks. Elsewhere these are no-ops.
void poison(void* block, size_t c) { ASAN_POISON_MEMORY_REGION(block, (c + 1) * kGranule); }
void unpoison(void* block, size_t c) { ASAN_UNPOISON_MEMORY_REGION(block, (c + 1) * kGranule); }

struct Block {
  Block* next;
};
struct FreeList {
  Block* head = nullptr;
  size_t count = 0;
};

struct Lists {
  FreeList lists[kClasses];
  ~Lists();
};
thread_local Lists t_lists;
// Set once this thread's lists are destroyed (thread exit): later frees go to malloc. A plain bool
// has no destructor, so it can be read at any point of the exit.
thread_local bool t_lists_gone = false;

Lists::~Lists() {
  t_lists_gone = true;
  for (size_t c = 0; c < kClasses; ++c)
    while (Block* b = lists[c].head) {
      unpoison(b, c);
      lists[c].head = b->next;
      std::free(b);
    }
}

size_t class_of(size_t bytes) { return (bytes - 1) / kGranule; }

}  // namespace

void* allocate(size_t bytes) {
  if (bytes == 0 || bytes > kLargest) {
    if (void* p = std::malloc(bytes ? bytes : 1)) return p;
    throw std::bad_alloc();
  }
  const size_t c = class_of(bytes);
  if (!t_lists_gone) {
    FreeList& l = t_lists.lists[c];
    if (Block* b = l.head) {
      unpoison(b, c);
      l.head = b->next;
      // The next pop reads the next block's link and its caller writes the block: cache misses
      // each, in a chain for the links, once a flush has freed thousands of blocks. Asked for
      // now, the block arrives while this one is in use.
      if (const char* next = reinterpret_cast<const char*>(l.head))
        for (size_t line = 0; line <= c; ++line) __builtin_prefetch(next + line * kGranule, 1);
      --l.count;
      return b;
    }
  }
  // Every block of a class has the class's full size (whichever thread frees it may keep it).
  if (void* p = std::malloc((c + 1) * kGranule)) return p;
  throw std::bad_alloc();
}

void deallocate(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes == 0 || bytes > kLargest || t_lists_gone) return std::free(p);
  const size_t c = class_of(bytes);
  FreeList& l = t_lists.lists[c];
  if (l.count * (c + 1) * kGranule >= kMaxBytesPerClass) return std::free(p);
  l.head = new (p) Block{l.head};
  ++l.count;
  poison(p, c);
}

}  // namespace kiln::pool
