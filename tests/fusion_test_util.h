// Helpers shared by the fusion tests (fusion_test.cpp, fusion_numerics_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config.h"

namespace fusion_test {

// Compiled kernels, each built before it runs (whatever KILN_COMPILE says), so launches count kernels.
struct HalideBackend {
  HalideBackend() : saved(kiln::config()) {
    kiln::config().backend = "halide";
    kiln::config().compile_in_background = false;
  }
  ~HalideBackend() { kiln::config() = saved; }
  kiln::Config saved;
};

// Launches (and compiles) made by `f`, counted from a clean segment.
template <typename F>
kiln::Stats count(F&& f) {
  kiln::sync();
  kiln::reset_stats();
  f();
  kiln::sync();
  return kiln::stats();
}

// `values()` on the Halide backend, then on the interpreter: {fused, reference}. The caller holds
// a HalideBackend, which restores the configuration.
template <typename F>
auto fused_and_reference(F&& values) {
  kiln::config().backend = "halide";
  auto fused = values();
  kiln::config().backend = "interp";
  auto reference = values();
  kiln::config().backend = "halide";
  return std::make_pair(std::move(fused), std::move(reference));
}

inline torch::Tensor gelu_chain(const torch::Tensor& x) {  // the tanh form, nine elementwise ops
  auto x3 = x * x * x;
  auto inner = (x + x3 * 0.044715) * 0.7978845608;
  return (x * 0.5) * (torch::tanh(inner) + 1.0);
}

// A loss's value, then its input's gradient, flattened.
inline std::vector<float> loss_and_gradient(const torch::Tensor& loss, const torch::Tensor& input) {
  std::vector<float> out = loss.reshape({1}).to_vector<float>();
  auto g = input.grad().to_vector<float>();
  out.insert(out.end(), g.begin(), g.end());
  return out;
}

// Each value within `tolerance` (relative, plus as much absolute), NaN where the reference has
// NaN and infinities exactly; `what` names the case in a failure.
inline void expect_near_all(const std::vector<float>& fused, const std::vector<float>& reference,
                            double tolerance = 1e-5, const std::string& what = "") {
  ASSERT_EQ(fused.size(), reference.size()) << what;
  for (size_t i = 0; i < fused.size(); ++i) {
    if (std::isnan(reference[i]))
      EXPECT_TRUE(std::isnan(fused[i])) << what << " value " << i;
    else if (std::isinf(reference[i]))
      EXPECT_EQ(fused[i], reference[i]) << what << " value " << i;
    else
      EXPECT_NEAR(fused[i], reference[i], tolerance * (1 + std::fabs(reference[i]))) << what << " value " << i;
  }
}

// The tensors' values (as float32), one tensor after another.
inline std::vector<float> values_of(const std::vector<torch::Tensor>& tensors) {
  std::vector<float> values;
  for (const auto& t : tensors) {
    auto v = t.to(torch::kFloat).to_vector<float>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

}  // namespace fusion_test
