// runtime/small_vector.h: the inline-first vector an autograd node keeps its lists in.
#include "runtime/small_vector.h"

#include <gtest/gtest.h>

#include <string>

using kiln::detail::SmallVector;

namespace {

// Longer than any short-string buffer, so a moved-from copy would be empty.
const std::string kLong(64, 'x');

TEST(SmallVector, GrowsPastItsInlineElementsKeepingThemInOrder) {
  SmallVector<std::string, 2> v;
  for (int i = 0; i < 9; ++i) v.push_back(kLong + std::to_string(i));
  ASSERT_EQ(v.size(), 9u);
  EXPECT_GE(v.capacity(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(v[i], kLong + std::to_string(i));
}

TEST(SmallVector, PushingItsOwnElementWhileGrowingCopiesThatElement) {
  SmallVector<std::string, 1> v{kLong};
  v.push_back(v[0]);  // inline to heap
  v.push_back(v[1]);  // heap to a larger heap block
  v.emplace_back(v.back());
  ASSERT_EQ(v.size(), 4u);
  for (const std::string& s : v) EXPECT_EQ(s, kLong);
}

TEST(SmallVector, MovesAndCopiesInlineAndHeapContents) {
  SmallVector<std::string, 2> inline_one{kLong};
  SmallVector<std::string, 2> heap{kLong, kLong + "1", kLong + "2"};
  SmallVector<std::string, 2> copy = heap;
  SmallVector<std::string, 2> moved_heap = std::move(heap);
  SmallVector<std::string, 2> moved_inline = std::move(inline_one);
  EXPECT_TRUE(heap.empty());
  EXPECT_TRUE(inline_one.empty());
  ASSERT_EQ(moved_heap.size(), 3u);
  EXPECT_EQ(moved_heap[2], kLong + "2");
  EXPECT_EQ(copy[1], kLong + "1");
  ASSERT_EQ(moved_inline.size(), 1u);
  EXPECT_EQ(moved_inline[0], kLong);
  EXPECT_THROW(moved_inline.at(1), std::out_of_range);
}

}  // namespace
