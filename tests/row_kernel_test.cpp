// Row kernels (fusion/partition.cpp, codegen/halide/lower_kernel.cpp lower_rows) against the
// interpreter: short and long rows, rows whose kept dims coalesce away, two reduced dims, bool,
// int64 and double reductions, per-element values read by other kernels, and random programs
// of per-element and per-row ops.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <functional>
#include <random>

#include "runtime/config.h"

namespace {

using Program = std::function<std::vector<torch::Tensor>()>;

std::vector<std::vector<double>> run_on(const std::string& backend, const Program& program) {
  const kiln::Config saved = kiln::config();
  kiln::config().backend = backend;
  kiln::config().compile_in_background = false;
  torch::manual_seed(11);
  std::vector<std::vector<double>> values;
  for (auto& out : program()) values.push_back(out.to(torch::kDouble).contiguous().to_vector<double>());
  kiln::config() = saved;
  return values;
}

// Halide's results equal the interpreter's to `tolerance` (relative), NaN where it has NaN.
void expect_matches_interpreter(const std::string& name, const Program& program, double tolerance = 1e-4) {
  const auto fused = run_on("halide", program), reference = run_on("interp", program);
  ASSERT_EQ(fused.size(), reference.size()) << name;
  for (size_t o = 0; o < fused.size(); ++o) {
    ASSERT_EQ(fused[o].size(), reference[o].size()) << name << " output " << o;
    int reported = 0;
    for (size_t i = 0; i < fused[o].size(); ++i) {
      const double a = fused[o][i], b = reference[o][i];
      const bool same =
          (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= tolerance * (1 + std::fabs(b));
      if (!same && reported++ < 3) ADD_FAILURE() << name << " output " << o << " [" << i << "]: " << a << " vs " << b;
    }
  }
}

torch::Tensor softmax_over(const torch::Tensor& x, std::vector<int64_t> dims) {
  auto e = (x - x.amax(dims, true)).exp();
  return e / e.sum(dims, true);
}

}  // namespace

TEST(RowKernel, RowsOfEverySizeAndLayout) {
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {1, 300}, {1, 1, 5}, {16, 1}, {16, 2}, {16, 3}, {16, 7}, {16, 8}, {16, 9}, {3, 17}, {2, 3, 33}})
    expect_matches_interpreter("softmax of " + std::to_string(shape.front()) + " x " + std::to_string(shape.back()),
                               [&] { return std::vector<torch::Tensor>{torch::softmax(torch::randn(shape) * 3, -1)}; });
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{1, 300}, {8, 5}, {2, 3, 40}})
    expect_matches_interpreter("per-element and per-row outputs", [&] {
      auto x = torch::randn(shape) * 3;
      auto m = x.amax({-1}, true);
      auto e = (x - m).exp();
      auto s = e.sum({-1}, true);
      return std::vector<torch::Tensor>{e / s, m, s.log()};
    });
  expect_matches_interpreter("two reduced dims", [] {
    return std::vector<torch::Tensor>{softmax_over(torch::randn({4, 6, 7}), {1, 2})};
  });
  expect_matches_interpreter("two reduced dims, transposed", [] {
    return std::vector<torch::Tensor>{softmax_over(torch::randn({4, 37, 20}).transpose(1, 2), {1, 2})};
  });
  expect_matches_interpreter("empty rows", [] {
    auto x = torch::randn({4, 0});
    auto y = x - x.sum({1}, true);
    return std::vector<torch::Tensor>{y, (y * y).sum({1}, true)};
  });
}

// The longest rows a row kernel takes (fusion's kMaxRowElements): each stored per-row value is a
// row on the stack (cross-entropy stores exp(x - max) for its sum and its gradient), and the
// first phase prefetches the next row.
TEST(RowKernel, LongestRowsWithValuesStoredPerRow) {
  expect_matches_interpreter("cross-entropy and softmax over rows of 65536", [] {
    auto logits = (torch::randn({3, 65536}) * 4).requires_grad_();
    auto target = torch::tensor({7, 65535, 0});
    auto loss = torch::nn::functional::cross_entropy(logits, target);
    loss.backward();
    // Gradients and probabilities are ~1 / 65536 each: scaled to ~1 for the relative tolerance.
    return std::vector<torch::Tensor>{loss, logits.grad() * 196608, torch::softmax(logits.detach() * 2, 1) * 65536};
  });
}

TEST(RowKernel, BoolLongAndDoubleReductions) {
  for (int64_t d : {5, 40}) {
    expect_matches_interpreter("any", [&] {
      auto x = torch::randn({6, d});
      return std::vector<torch::Tensor>{torch::where((x > 1.0).any(1, true), x, -x)};
    });
    expect_matches_interpreter("count", [&] {
      auto x = torch::randn({6, d});
      auto y = x * (x > 0).sum({1}, true);
      return std::vector<torch::Tensor>{y, (y > 0).sum({1}, true)};
    });
    expect_matches_interpreter("double", [&] {
      return std::vector<torch::Tensor>{softmax_over(torch::randn({6, d}, torch::kDouble), {1})};
    });
    expect_matches_interpreter("int64", [&] {
      auto x = (torch::randn({6, d}) * 10).to(torch::kLong);
      auto c = x - x.amax({1}, true);
      return std::vector<torch::Tensor>{(c * c).sum({1}, true), c};
    });
  }
}

TEST(RowKernel, PerElementValuesReadByOtherKernels) {
  expect_matches_interpreter("by a matmul", [] {
    auto x = torch::randn({8, 40});
    auto c = x - x.mean({1}, true);
    return std::vector<torch::Tensor>{torch::matmul(c, torch::randn({40, 3})), (c * c).mean({1}, true)};
  });
  expect_matches_interpreter("by a column sum", [] {
    auto x = torch::randn({8, 40});
    auto e = (x - x.amax({1}, true)).exp();
    auto s = e.sum({1}, true);
    return std::vector<torch::Tensor>{(e / s).sum({0}, true), s};
  });
  expect_matches_interpreter("transposed", [] {
    auto x = torch::randn({8, 8});
    auto c = x - x.mean({1}, true);
    return std::vector<torch::Tensor>{c.t() * 3 + c, c.sum({1}, true)};
  });
  expect_matches_interpreter("three phases", [] {
    auto x = torch::randn({8, 40});
    auto c = x - x.mean({1}, true);
    auto n = c * ((c * c).mean({1}, true) + 1e-5).rsqrt();
    return std::vector<torch::Tensor>{n * (n * x).sum({1}, true)};
  });
}

// Random chains of per-element ops (tanh, products, x - row, exp(x - row)) and per-row ones (sum,
// max, mean, an any-selected min or max, functions of other rows), over 2 or 3 dims, one or two
// of them reduced, float or double; outputs include a column sum and a matmul.
TEST(RowKernel, RandomRowPrograms) {
  for (int seed = 0; seed < 60; ++seed) {
    std::mt19937 g{uint32_t(seed)};
    auto pick = [&](int m) { return int(g() % unsigned(m)); };
    const int64_t sizes[] = {2, 3, 5, 8, 9, 17, 64, 100};
    const int64_t D = sizes[pick(8)], A = 1 + pick(5), B = pick(3) == 0 ? 1 : 1 + pick(4);
    const bool three = pick(2), transposed = three && pick(3) == 0, two_reduced = three && pick(3) == 0;
    const bool f64 = pick(5) == 0;
    expect_matches_interpreter(
        "seed " + std::to_string(seed),
        [&] {
          std::mt19937 h{uint32_t(seed * 7 + 1)};
          auto r = [&](int m) { return int(h() % unsigned(m)); };
          auto options = torch::TensorOptions(f64 ? torch::kDouble : torch::kFloat);
          torch::Tensor x = three ? torch::randn({A, transposed ? D : B, transposed ? B : D}, options)
                                  : torch::randn({A, D}, options);
          if (transposed) x = x.transpose(1, 2);
          const std::vector<int64_t> dims = two_reduced ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{-1};
          std::vector<torch::Tensor> elements{x}, rows;
          auto any_element = [&] { return elements[size_t(r(int(elements.size())))]; };
          auto any_row = [&] { return rows[size_t(r(int(rows.size())))]; };
          for (int s = 0; s < 9; ++s) {
            int k = r(9);
            if (rows.empty() && k >= 2 && k <= 4) k = 5;
            torch::Tensor e = any_element();
            switch (k) {
              case 0: elements.push_back(torch::tanh(e)); break;
              case 1: elements.push_back(e * any_element() + 0.5); break;
              case 2: elements.push_back(e - any_row()); break;
              case 3: elements.push_back((e - any_row()).exp()); break;
              case 4: {
                auto q = any_row();
                rows.push_back(q * q + 1);
                break;
              }
              case 5: rows.push_back(e.sum(dims, true)); break;
              case 6: rows.push_back(e.amax(dims, true)); break;
              case 7: rows.push_back(e.mean(dims, true)); break;
              default:
                rows.push_back(torch::where((e > 0.2).any(dims.size() == 1 ? -1 : 2, true), e.amin(dims, true),
                                            e.amax(dims, true)));
            }
          }
          std::vector<torch::Tensor> outs{elements.back()};
          if (r(2)) outs.push_back(any_element());
          if (!rows.empty() && r(2)) outs.push_back(any_row());
          if (r(4) == 0) outs.push_back(any_element().sum({0}, true));
          if (r(4) == 0 && !three) outs.push_back(torch::matmul(any_element(), torch::ones({D, 2}, options)));
          return outs;
        },
        1e-3);
  }
}
