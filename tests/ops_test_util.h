// Checks shared by the op value tests (ops_test.cpp, ops_print_random_test.cpp, libtorch_parity_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace ops_test {

inline std::vector<double> vals(const kiln::Tensor& t) { return t.to_vector<double>(); }

// Elementwise |actual - expected| <= tol * max(1, |expected|), and the same shape.
inline ::testing::AssertionResult near(const kiln::Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  std::vector<double> v = vals(t);
  if (v.size() != expected.size())
    return ::testing::AssertionFailure() << "got " << v.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < v.size(); ++i) {
    const bool same = v[i] == expected[i] || (std::isnan(v[i]) && std::isnan(expected[i]));
    if (!same && !(std::fabs(v[i] - expected[i]) <= tol * std::max(1.0, std::fabs(expected[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": got " << v[i] << ", expected " << expected[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ops_test

#define EXPECT_SHAPE(t, ...) EXPECT_EQ((t).sizes().vec(), (std::vector<int64_t>{__VA_ARGS__}))
