// Helpers shared by the nn, optim and loss tests: value comparisons and a float64 gradient check
// by central finite differences.
#pragma once
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace nn_test {

inline void expect_values(const kiln::Tensor& t, const std::vector<double>& expected, double rtol = 1e-5,
                          double atol = 1e-6) {
  auto got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << "at flat index " << i;
}

inline kiln::Tensor doubles(const std::vector<double>& values, kiln::IntArrayRef shape) {
  return kiln::tensor(values, kiln::kDouble).reshape(shape);
}

// Compares autograd's gradient of the scalar f(x) with central differences of f, in float64.
inline void expect_gradient_matches(const std::function<kiln::Tensor(const kiln::Tensor&)>& f, const kiln::Tensor& x0,
                                    double eps = 1e-6, double tol = 1e-6) {
  const std::vector<int64_t> shape = x0.sizes().vec();
  const std::vector<double> base = x0.to_vector<double>();
  kiln::Tensor x = doubles(base, shape).requires_grad_(true);
  kiln::Tensor y = f(x);
  ASSERT_EQ(y.numel(), 1) << "f must return a scalar";
  y.backward();
  ASSERT_TRUE(x.grad().defined()) << "no gradient reached x";
  const std::vector<double> analytic = x.grad().to_vector<double>();
  for (size_t i = 0; i < base.size(); ++i) {
    std::vector<double> plus = base, minus = base;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric =
        (f(doubles(plus, shape)).item<double>() - f(doubles(minus, shape)).item<double>()) / (2 * eps);
    EXPECT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::abs(numeric))) << "d f / d x[" << i << "]";
  }
}

// Runs `fn`, expecting a kiln::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    const std::string message = e.what();
    for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
    return;
  }
  ADD_FAILURE() << "expected a kiln::Error mentioning " << (parts.empty() ? "" : parts[0]);
}

}  // namespace nn_test
