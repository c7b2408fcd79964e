// A finite-difference gradient checker in float64, as PyTorch's gradcheck and gradgradcheck.
//
// check_grad(f, inputs): for a random cotangent w of f's output, compares the vector-Jacobian
// product from kiln::autograd::grad with central differences of <f(x), w> in every input element.
// check_gradgrad(f, inputs): the same one order up. The first gradients g_i(x, w) are taken with
// create_graph=true; the gradient of sum_i <g_i, v_i> (random v_i) with respect to the inputs and
// to w is compared with central differences of that sum, whose g_i come from a plain first-order
// grad. Inputs must be float64 leaves that require grad; what should not be differentiated
// (indices, masks) belongs in f's closure.
#pragma once
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gradcheck {

using kiln::Tensor;
using kiln::TensorList;
using Fn = std::function<Tensor(const TensorList&)>;

struct Options {
  double eps = 1e-6;   // central-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-5;
  bool gradgrad = true;  // check() also runs check_gradgrad
};

// --- inputs ---

// A float64 leaf that requires grad, made from `t`'s values.
inline Tensor leaf(const Tensor& t) {
  Tensor out = kiln::tensor(t.to_vector<double>(), kiln::kFloat64).reshape(t.sizes()).detach();
  out.requires_grad_(true);
  return out;
}
// N(0, 1) values.
inline Tensor randn(kiln::IntArrayRef shape) { return leaf(kiln::randn(shape, kiln::kFloat64)); }
// U(lo, hi) values.
inline Tensor uniform(kiln::IntArrayRef shape, double lo, double hi) {
  return leaf(kiln::rand(shape, kiln::kFloat64) * (hi - lo) + lo);
}
// Values of random sign with magnitude in [margin, 1 + margin): away from 0 (abs, relu, sign).
inline Tensor away_from_zero(kiln::IntArrayRef shape, double margin = 0.2) {
  Tensor mag = kiln::rand(shape, kiln::kFloat64) + margin;
  Tensor sign = kiln::where(kiln::rand(shape, kiln::kFloat64) > 0.5, 1.0, kiln::full(shape, -1.0, kiln::kFloat64));
  return leaf(mag * sign);
}

namespace detail {

inline std::vector<double> normal_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// A float64 tensor of `shape` from host values, optionally a leaf that requires grad.
inline Tensor from(const std::vector<double>& v, kiln::IntArrayRef shape, bool requires_grad = false) {
  Tensor t = kiln::tensor(v, kiln::kFloat64).reshape(shape).detach();
  if (requires_grad) t.requires_grad_(true);
  return t;
}

inline double dot(const Tensor& t, const std::vector<double>& w) {
  std::vector<double> v = t.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

// `values` with element (i, j) moved by delta, as tensors of the inputs' shapes.
inline TensorList perturbed(const std::vector<std::vector<double>>& values, const TensorList& like, size_t i, size_t j,
                            double delta, bool requires_grad) {
  TensorList out;
  for (size_t k = 0; k < values.size(); ++k) {
    std::vector<double> v = values[k];
    if (k == i) v[j] += delta;
    out.push_back(from(v, like[k].sizes(), requires_grad));
  }
  return out;
}

inline Tensor zeros_if_undefined(const Tensor& g, const Tensor& like) {
  return g.defined() ? g : kiln::zeros_like(like);
}

// Compares analytic and numeric derivatives of one input; appends mismatches to `msg`.
inline bool compare(const Tensor& analytic, const std::vector<double>& numeric, const Tensor& input,
                    const std::string& what, const Options& o, std::ostringstream& msg) {
  if (analytic.sizes() != input.sizes()) {
    msg << what << ": gradient has shape " << analytic.sizes() << ", input has " << input.sizes() << "\n";
    return false;
  }
  if (analytic.dtype() != input.dtype()) {
    msg << what << ": gradient has dtype " << analytic.dtype() << ", input has " << input.dtype() << "\n";
    return false;
  }
  std::vector<double> a = analytic.to_vector<double>();
  bool ok = true;
  for (size_t j = 0; j < a.size(); ++j)
    if (!(std::fabs(a[j] - numeric[j]) <= o.atol + o.rtol * std::fabs(numeric[j]))) {
      msg << what << " element " << j << ": analytic " << a[j] << ", numeric " << numeric[j] << "\n";
      ok = false;
    }
  return ok;
}

inline std::vector<std::vector<double>> values_of(const TensorList& ts) {
  std::vector<std::vector<double>> v;
  for (const auto& t : ts) v.push_back(t.to_vector<double>());
  return v;
}

}  // namespace detail

// First-order check of f at `inputs`.
inline ::testing::AssertionResult check_grad(const Fn& f, const TensorList& inputs, const Options& o = {}) {
  using namespace detail;
  Tensor y = f(inputs);
  if (!y.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  if (y.dtype() != kiln::kFloat64) return ::testing::AssertionFailure() << "output is " << y.dtype() << ", not float64";
  const std::vector<double> w = normal_values(size_t(y.numel()), 1234);
  TensorList grads = kiln::autograd::grad({y}, inputs, {from(w, y.sizes())}, std::nullopt, false, true);

  std::ostringstream msg;
  bool ok = true;
  const auto values = values_of(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> numeric(values[i].size());
    for (size_t j = 0; j < numeric.size(); ++j) {
      kiln::autograd::NoGradGuard no_grad;
      const double hi = dot(f(perturbed(values, inputs, i, j, o.eps, false)), w);
      const double lo = dot(f(perturbed(values, inputs, i, j, -o.eps, false)), w);
      numeric[j] = (hi - lo) / (2 * o.eps);
    }
    ok &= compare(zeros_if_undefined(grads[i], inputs[i]), numeric, inputs[i], "grad of input " + std::to_string(i), o,
                  msg);
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << msg.str();
}

// Second-order check of f at `inputs` (also differentiates through the cotangent w).
inline ::testing::AssertionResult check_gradgrad(const Fn& f, const TensorList& inputs, const Options& o = {}) {
  using namespace detail;
  const size_t n = inputs.size();
  Tensor y0 = f(inputs);
  const kiln::Shape out_shape = y0.sizes().vec();
  const std::vector<double> w = normal_values(size_t(y0.numel()), 1234);
  std::vector<std::vector<double>> v;
  for (size_t i = 0; i < n; ++i) v.push_back(normal_values(size_t(inputs[i].numel()), 99 + uint32_t(i)));

  // S(args) = sum_i <g_i, v_i> with g = grad(<f(x), w>, x); args = inputs followed by w.
  auto first_grads = [&](const TensorList& args, bool create_graph) {
    TensorList x(args.begin(), args.begin() + n);
    return kiln::autograd::grad({f(x)}, x, {args[n]}, std::nullopt, create_graph, true);
  };
  auto s_value = [&](const TensorList& args) {
    TensorList g = first_grads(args, false);
    double s = 0;
    for (size_t i = 0; i < n; ++i)
      if (g[i].defined()) s += dot(g[i], v[i]);
    return s;
  };

  TensorList args = inputs;
  args.push_back(from(w, out_shape, true));
  TensorList g = first_grads(args, true);
  TensorList outs, cotangents;
  for (size_t i = 0; i < n; ++i)
    if (g[i].defined() && g[i].requires_grad()) {
      outs.push_back(g[i]);
      cotangents.push_back(from(v[i], inputs[i].sizes()));
    }
  TensorList analytic(args.size());
  if (!outs.empty()) analytic = kiln::autograd::grad(outs, args, cotangents, std::nullopt, false, true);

  std::ostringstream msg;
  bool ok = true;
  const auto values = values_of(args);
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<double> numeric(values[i].size());
    for (size_t j = 0; j < numeric.size(); ++j) {
      const double hi = s_value(perturbed(values, args, i, j, o.eps, true));
      const double lo = s_value(perturbed(values, args, i, j, -o.eps, true));
      numeric[j] = (hi - lo) / (2 * o.eps);
    }
    const std::string what = i < n ? "grad-of-grad of input " + std::to_string(i) : std::string("grad-of-grad of w");
    ok &= compare(zeros_if_undefined(analytic[i], args[i]), numeric, args[i], what, o, msg);
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << msg.str();
}

// Both checks (the second unless o.gradgrad is false).
inline ::testing::AssertionResult check(const Fn& f, const TensorList& inputs, const Options& o = {}) {
  auto first = check_grad(f, inputs, o);
  if (!first || !o.gradgrad) return first;
  return check_gradgrad(f, inputs, o);
}

}  // namespace gradcheck
