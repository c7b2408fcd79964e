// The per-op kernels compiled with kiln (codegen/per_op_kernels.h) and the unfused executor that
// runs them while fused kernels compile (codegen/unfused.h): each op on each dtype computes what
// the interpreter computes; a cold process runs its first steps on them without waiting for a
// compiler, and exits cleanly while kernels are still compiling; eager mode never compiles. The
// random programs on the unfused backend are in differential_test.cpp.
#include <gtest/gtest.h>
#include <kiln/torch.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "codegen/backend.h"
#include "codegen/per_op_kernels.h"
#include "runtime/config.h"
#include "runtime/stats.h"

using namespace kiln;
using ir::Node;
using ir::Op;

namespace {

const ScalarType kDtypes[] = {kFloat, kDouble, kLong, kInt, kShort, kChar, kByte, kBool, kHalf, kBFloat16};

// An Input node of `dtype` holding `count` values drawn around zero (integers small, some
// exactly zero, so that divisions by zero and comparisons of equal values occur).
ir::NodePtr input(ScalarType dtype, int64_t count, uint64_t seed) {
  auto n = std::make_shared<Node>();
  n->op = Op::Input;
  n->dtype = dtype;
  n->shape = {count};
  n->result = make_buffer(count * int64_t(element_size(dtype)));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  for (int64_t i = 0; i < count; ++i) {
    double v = i % 7 == 0 ? 0.0 : u(rng);
    if (i % 11 == 3 && is_floating(dtype)) v = NAN;
    if (!is_floating(dtype)) v = std::round(v * 3);
    write_element(n->result->data(), dtype, i, v);
  }
  return n;
}

// A node of `op` over views of `operands` with the shape {4, 5, 6}: the first read transposed,
// the second broadcast along a dim, the third contiguous, so every kind of stride is walked.
ir::NodePtr node_over(Op op, ScalarType dtype, const std::vector<ir::NodePtr>& operands) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->dtype = dtype;
  n->shape = {4, 5, 6};
  const Shape layouts[3] = {{1, 4, 20}, {6, 0, 1}, {30, 6, 1}};
  for (size_t j = 0; j < operands.size(); ++j)
    n->inputs.push_back(ir::Operand{operands[j], ir::View{n->shape, layouts[j % 3], int64_t(j)}});
  return n;
}

bool same_or_both_nan(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The same node, computed once on the per-op kernels and once on the interpreter: the same bits
// for the ops correctly rounded in IEEE arithmetic; libmvec's vector forms of the transcendental
// functions are a few float64 ulps from libm's.
void expect_same_as_interpreter(Node& n, const std::string& what) {
  ASSERT_TRUE(codegen::has_per_op_kernel(n)) << what;
  Node reference = n;
  codegen::compute_per_op(n);
  codegen::run_node(reference);
  const bool exact = ir::facts(n.op).has(ir::kExact) || n.op == Op::Const;
  for (int64_t i = 0; i < n.numel(); ++i) {
    const double got = read_element<double>(n.result->data(), n.dtype, i);
    const double want = read_element<double>(reference.result->data(), n.dtype, i);
    const double ulps =
        exact || !is_floating(n.dtype) ? 0 : 8 * std::fabs(want) * (n.dtype == kDouble ? 0x1p-52 : 0x1p-23);
    ASSERT_TRUE(same_or_both_nan(got, want) || std::fabs(got - want) <= ulps)
        << what << " element " << i << ": " << got << " vs " << want;
  }
}

}  // namespace

namespace kiln::codegen {
namespace {

// Every elementwise op of the table with every dtype it takes: the same bits as the interpreter.
TEST(PerOpKernels, EveryElementwiseOpOnEveryDtypeComputesWhatTheInterpreterComputes) {
  int checked = 0;
  for (const Op* op = ir::all_ops(); op != ir::all_ops() + ir::kOpCount; ++op) {
    const ir::OpKind kind = ir::op_kind(*op);
    const bool elementwise = kind == ir::OpKind::Unary || kind == ir::OpKind::Binary || kind == ir::OpKind::Compare ||
                             kind == ir::OpKind::Select;
    if (!elementwise || *op == Op::Cast) continue;
    for (ScalarType dtype : kDtypes) {
      if (*op == Op::Not && dtype != kBool) continue;
      const int arity = kind == ir::OpKind::Unary ? 1 : kind == ir::OpKind::Select ? 3 : 2;
      std::vector<ir::NodePtr> operands;
      for (int j = 0; j < arity; ++j)
        operands.push_back(input(kind == ir::OpKind::Select && j == 0 ? kBool : dtype, 200, uint64_t(j + 1)));
      auto n = node_over(*op, kind == ir::OpKind::Compare ? kBool : dtype, operands);
      expect_same_as_interpreter(*n, std::string(ir::op_name(*op)) + " on " + dtype_name(dtype));
      ++checked;
    }
  }
  EXPECT_GT(checked, 400);
}

TEST(PerOpKernels, CastsBetweenEveryPairOfDtypesComputeWhatTheInterpreterComputes) {
  for (ScalarType from : kDtypes)
    for (ScalarType to : kDtypes) {
      auto n = node_over(Op::Cast, to, {input(from, 200, 7)});
      expect_same_as_interpreter(*n, std::string("cast ") + dtype_name(from) + " to " + dtype_name(to));
    }
}

TEST(PerOpKernels, ConstantsFillEveryDtype) {
  for (ScalarType dtype : kDtypes) {
    Node n;
    n.op = Op::Const;
    n.dtype = dtype;
    n.shape = {3, 70000};
    n.scalar = is_integer(dtype) ? -5 : 1.25;
    n.int_scalar = -5;
    expect_same_as_interpreter(n, std::string("const ") + dtype_name(dtype));
  }
}

// Reductions over every subset of three dims of a transposed view, large enough to split across
// threads: the interpreter's values (it sums in order, the per-op kernels in blocks: equal within
// float64's rounding, then rounded to the dtype).
TEST(PerOpKernels, ReductionsOverAnyAxesMatchTheInterpreter) {
  for (Op op : {Op::Sum, Op::Prod, Op::ReduceMax, Op::ReduceMin})
    for (ScalarType dtype : {kFloat, kDouble, kLong, kInt, kHalf})
      for (int mask = 1; mask < 8; ++mask) {
        auto x = input(dtype, 40 * 50 * 60, 3);
        Node n;
        n.op = op;
        n.dtype = dtype;
        n.shape = {40, 50, 60};
        for (int d = 0; d < 3; ++d)
          if (mask & (1 << d)) {
            n.ints.push_back(d);
            n.shape[size_t(d)] = 1;
          }
        n.inputs.push_back(ir::Operand{x, ir::View{{40, 50, 60}, {1, 40 * 60, 40}, 0}});
        const std::string what =
            std::string(ir::op_name(op)) + " on " + dtype_name(dtype) + " axes " + std::to_string(mask);
        ASSERT_TRUE(has_per_op_kernel(n)) << what;
        Node reference = n;
        compute_per_op(n);
        run_node(reference);
        for (int64_t i = 0; i < n.numel(); ++i) {
          const double got = read_element<double>(n.result->data(), dtype, i);
          const double want = read_element<double>(reference.result->data(), dtype, i);
          const double tolerance = op == Op::Sum && is_floating(dtype) ? 1e-5 * (1 + std::fabs(want)) : 0;
          if (op == Op::Prod && is_floating(dtype) && std::isinf(want)) continue;  // order decides overflow
          ASSERT_TRUE(same_or_both_nan(got, want) || std::fabs(got - want) <= tolerance)
              << what << " element " << i << ": " << got << " vs " << want;
        }
      }
}

}  // namespace
}  // namespace kiln::codegen

namespace {

// An MLP's training step, the shape of perf/bench_mlp.h, small.
struct SmallMlp : torch::nn::Module {
  SmallMlp()
      : fc1(register_module("fc1", torch::nn::Linear(32, 48))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({48})))),
        fc2(register_module("fc2", torch::nn::Linear(48, 10))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2->forward(torch::gelu(norm->forward(fc1->forward(x)))); }
  torch::nn::Linear fc1;
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc2;
};

// The losses of `steps` Adam steps from the same seed.
std::vector<float> train_small_mlp(int steps) {
  torch::manual_seed(0);
  SmallMlp net;
  torch::optim::Adam adam(net.parameters(), torch::optim::AdamOptions(1e-2));
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    auto x = torch::randn({16, 32});
    auto y = torch::randint(0, 10, {16});
    adam.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net.forward(x), y);
    loss.backward();
    adam.step();
    losses.push_back(loss.item<float>());
  }
  return losses;
}

// Runs this test binary's `filter` in a child process with `env` added; returns its exit status.
int run_child(const std::string& filter, const std::vector<std::string>& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_also_run_disabled_tests", "--gtest_filter=" + filter};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> vars = env;
  for (char** e = environ; *e; ++e) vars.push_back(*e);  // a later copy of a name does not win
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// Run by the test below in a process of its own, with an empty kernel cache and KILN_COMPILE
// unset (background, the default): the first steps run on the per-op kernels, the same losses
// as the interpreter's; the process then returns from main while kernels are still compiling.
TEST(Unfused, DISABLED_ColdProcessChild) {
  ASSERT_TRUE(config().compile_in_background);
  reset_stats();
  const std::vector<float> losses = train_small_mlp(2);
  const Stats s = stats();
  EXPECT_GT(s.kernels_unfused, 10);
  EXPECT_GE(s.flushes_unfused, 2);
  EXPECT_EQ(s.nodes_interpreted, 0);
  EXPECT_LT(s.kernels_compiled, s.kernels_unfused) << "kernels are still compiling when the process exits";
  const Config saved = config();
  config().backend = "interp";
  const std::vector<float> reference = train_small_mlp(2);
  config() = saved;
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_NEAR(losses[i], reference[i], 1e-4 * (1 + std::fabs(reference[i])));
}

TEST(Unfused, ColdProcessRunsPerOpKernelsFirstAndExitsWhileKernelsCompile) {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln-cold-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  // KILN_COMPILE is set for the child, which the tests' default (wait) would otherwise override.
  const int status =
      run_child("Unfused.DISABLED_ColdProcessChild", {"KILN_CACHE_DIR=" + dir.string(), "KILN_COMPILE=background"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, 0) << "the child's assertions failed, or it did not exit cleanly";
}

TEST(Unfused, BackgroundCompilationIsTheDefault) { EXPECT_TRUE(Config().compile_in_background); }

// Eager mode runs every op at once on the per-op kernels: no kernel is compiled or loaded.
TEST(Unfused, EagerModeRunsPerOpKernelsAndNeverCompiles) {
  set_lazy(false);
  reset_stats();
  auto x = torch::linspace(-2, 2, 1000).reshape({10, 100});
  auto y = (torch::atan2(x, x * x + 1) * torch::erf(x)).sum(1);
  auto values = y.contiguous();
  const Stats s = stats();
  set_lazy(true);
  EXPECT_EQ(s.kernels_compiled, 0);
  EXPECT_EQ(s.kernels_loaded, 0);
  EXPECT_GT(s.kernels_unfused, 3);
  EXPECT_EQ(s.nodes_interpreted, 0);
  auto xs = torch::linspace(-2, 2, 1000).reshape({10, 100});
  const Config saved = config();
  config().backend = "interp";
  auto expected = (torch::atan2(xs, xs * xs + 1) * torch::erf(xs)).sum(1).contiguous();
  config() = saved;
  for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR(values[i].item<float>(), expected[i].item<float>(), 1e-5);
}
