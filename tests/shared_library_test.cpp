// runtime/shared_library.h: how kiln opens CUDA's libraries, checked on libraries every machine has.
#include "runtime/shared_library.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

TEST(SharedLibrary, OpensTheFirstPathFoundAndBindsVersionedNamesFirst) {
  kiln::SharedLibrary lib({"libkiln-no-such-library.so.1", "libc.so.6"});
  ASSERT_TRUE(lib.opened()) << lib.open_error();
  EXPECT_EQ(lib.name(), "libkiln-no-such-library.so.1");
  size_t (*length)(const char*) = nullptr;
  lib.bind(length, {"kiln_no_such_function_v2", "strlen"});
  ASSERT_NE(length, nullptr);
  EXPECT_EQ(length("kiln"), 4u);
  // The versioned name's absence is not a miss when a fallback name is found.
  EXPECT_EQ(lib.missing(), "");
}

TEST(SharedLibrary, NamesEveryMissingFunctionAndWhyALibraryDidNotOpen) {
  kiln::SharedLibrary libc({"libc.so.6"});
  int (*f)() = nullptr;
  int (*g)() = nullptr;
  libc.bind(f, {"kiln_missing_one", "kiln_missing_one_fallback"});
  libc.bind(g, {"kiln_missing_two"});
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(libc.missing(), "kiln_missing_one, kiln_missing_two");

  kiln::SharedLibrary none({"libkiln-no-such-library.so.1"});
  EXPECT_FALSE(none.opened());
  EXPECT_NE(none.open_error().find("libkiln-no-such-library.so.1"), std::string::npos) << none.open_error();
  none.bind(f, {"strlen"});  // nothing to bind from: a miss, not a crash
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(none.missing(), "strlen");
}

}  // namespace
