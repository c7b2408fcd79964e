// EXPECT_THROW_WITH(stmt, text): stmt throws kiln::Error whose message contains text; a failure
// names what was expected.
#pragma once
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <string>

#define EXPECT_THROW_WITH(stmt, text)                                             \
  do {                                                                            \
    try {                                                                         \
      stmt;                                                                       \
      ADD_FAILURE() << "expected kiln::Error containing \"" << text << "\"";      \
    } catch (const kiln::Error& e) {                                              \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what(); \
    }                                                                             \
  } while (0)
