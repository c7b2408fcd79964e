// The plan: its order, the rewrites before partitioning (common subexpressions, identities,
// constant folding), and what the partition makes of a LayerNorm backward.
#include "fusion/passes.h"

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <thread>

#include "fusion/kernel.h"
#include "tracer/storage.h"

using namespace kiln;

namespace {

// A plan over the pending nodes behind `roots`, as a flush would make it.
fusion::Plan plan_of(const std::vector<Tensor>& roots) {
  std::vector<ir::NodePtr> nodes;
  for (const auto& t : roots) nodes.push_back(t.unsafeGetTensorImpl()->storage->node);
  return fusion::make_plan(nodes);
}

size_t count(const fusion::Plan& p, ir::Op op) {
  size_t n = 0;
  for (const auto& s : p.steps) n += s.node->op == op;
  return n;
}

}  // namespace

TEST(Passes, CommonSubexpressionsAreComputedOnce) {
  Tensor x = rand({4});
  Tensor y = (x * x).exp() + (x * x).exp();  // two x*x, two exp
  fusion::Plan p = plan_of({y});
  ASSERT_EQ(count(p, ir::Op::Mul), 2u);
  fusion::eliminate_common_subexpressions(p);
  EXPECT_EQ(count(p, ir::Op::Mul), 1u);
  EXPECT_EQ(count(p, ir::Op::Exp), 1u);
  Tensor expected = ((x * x).exp() * 2).detach();
  EXPECT_TRUE(allclose(y, expected));
}

// Each node of a chain reads a value that only it holds, so CSE does not hash it until a
// duplicate's readers are pointed at that value: then the whole second chain folds into the first.
TEST(Passes, DuplicateChainsAreComputedOnce) {
  Tensor x = rand({4});
  Tensor y = (x * x).exp().sin().neg() + (x * x).exp().sin().neg();
  fusion::Plan p = plan_of({y});
  ASSERT_EQ(count(p, ir::Op::Sin), 2u);
  fusion::eliminate_common_subexpressions(p);
  EXPECT_EQ(count(p, ir::Op::Mul), 1u);
  EXPECT_EQ(count(p, ir::Op::Exp), 1u);
  EXPECT_EQ(count(p, ir::Op::Sin), 1u);
  EXPECT_EQ(count(p, ir::Op::Neg), 1u);
  EXPECT_TRUE(allclose(y, (x * x).exp().sin().neg() * 2));
}

TEST(Passes, IdentitiesAndConstantsFold) {
  Tensor x = rand({3});
  Tensor y = ((x + 0.0) * 1.0 - 0.0) / 1.0 * (full({}, 2.0) * 3.0);
  fusion::Plan p = plan_of({y});
  fusion::simplify(p);
  EXPECT_EQ(count(p, ir::Op::Add) + count(p, ir::Op::Sub) + count(p, ir::Op::Div), 0u);
  EXPECT_EQ(count(p, ir::Op::Mul), 1u);  // x * 6, the constant folded
  EXPECT_TRUE(allclose(y, x * 6.0));
}

TEST(Passes, LiveValuesAreKept) {
  Tensor x = rand({3});
  Tensor a = x * 1.0;  // live: a tensor holds it, so it stays a node of its own
  Tensor b = x * 1.0;
  fusion::Plan p = plan_of({a, b});
  fusion::eliminate_common_subexpressions(p);
  fusion::simplify(p);
  EXPECT_EQ(count(p, ir::Op::Mul), 2u);
  EXPECT_TRUE(allclose(a, x) && allclose(b, x));
}

// LayerNorm's backward takes both of its row sums (of the gradient, and of the gradient times the
// normalized input) in one pass: the variance reads the mean as a constant (detail::centered_moments),
// so no sum waits on another. Through the mean, the variance's gradient added a sum that needed
// the first one, and the kernel made three passes over each row.
TEST(Passes, LayerNormBackwardSumsEachRowInOnePhase) {
  Tensor x = randn({8, 32}, requires_grad());
  nn::LayerNorm ln(nn::LayerNormOptions({32}));
  ln->forward(x).backward(randn({8, 32}));
  const ir::Node* grad = x.grad().unsafeGetTensorImpl()->storage->node.get();
  fusion::Plan p = plan_of({x.grad()});
  fusion::eliminate_common_subexpressions(p);
  fusion::simplify(p);
  int kernels = 0, deepest = 0;  // the kernel that writes x's gradient, and its latest phase
  for (const auto& k : fusion::partition(p, nullptr))
    for (int o : k.outputs)
      if (k.nodes[size_t(o)].node == grad && k.kind == fusion::Kernel::Kind::Reduction) {
        ++kernels;
        const auto phase = k.phases();
        for (int j : k.reduces) deepest = std::max(deepest, phase[size_t(j)]);
      }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(deepest, 1);
  Tensor row_sums = x.grad().sum(1).detach();  // the gradient of LayerNorm sums to 0 per row
  EXPECT_TRUE(allclose(row_sums, zeros({8}), 1e-4, 1e-4));
}

// A GELU between a LayerNorm and a matmul, as in an MLP: its gradient (an exp, and the erf it
// shares with the forward) is read by two kernels of LayerNorm's backward, the column sums of the
// weight's and bias's gradients and the row kernel of the input's. Each transcendental function
// is computed by one kernel and read by the others: counted by nodes, the gradient was cheap
// enough to compute in both, and MLP training computed GELU's backward twice per layer.
TEST(Passes, TranscendentalValuesReadByTwoKernelsAreComputedOnce) {
  Tensor x = randn({16, 64}, requires_grad());
  nn::LayerNorm ln(nn::LayerNormOptions({64}));
  Tensor w = randn({64, 8});
  matmul(gelu(ln->forward(x)), w).backward(randn({16, 8}));
  fusion::Plan p = plan_of({x.grad(), ln->weight.grad(), ln->bias.grad()});
  fusion::eliminate_common_subexpressions(p);
  fusion::simplify(p);
  int with_exp = 0, with_erf = 0;
  for (const auto& k : fusion::partition(p, nullptr)) {
    bool exp = false, erf = false;
    for (const auto& kn : k.nodes) {
      exp |= kn.node->op == ir::Op::Exp;
      erf |= kn.node->op == ir::Op::Erf;
    }
    with_exp += exp;
    with_erf += erf;
  }
  EXPECT_EQ(with_exp, 1);
  EXPECT_EQ(with_erf, 1);
  Tensor row_sums = x.grad().sum(1).detach();  // LayerNorm's input gradient sums to 0 per row
  EXPECT_TRUE(allclose(row_sums, zeros({16}), 1e-4, 1e-4));
}

// LayerNorm then GELU, forward and backward: one row kernel holding everything would write y,
// GELU's gradient and dx per element, which ran slower than separate kernels. The row kernel
// keeps what needs rows, the mean and the variance, in one pass over x, and the per-element work
// goes to a pointwise kernel (before, the mean and the variance were two kernels of their own).
TEST(Passes, LayerNormStatisticsShareARowKernelWhenGeluFollows) {
  Tensor x = randn({16, 64}, requires_grad());
  nn::LayerNorm ln(nn::LayerNormOptions({64}));
  kiln::sync();  // the parameters' initial values
  Tensor y = gelu(ln->forward(x));
  y.backward(randn({16, 64}));
  fusion::Plan p = plan_of({y, x.grad(), ln->weight.grad(), ln->bias.grad()});
  fusion::eliminate_common_subexpressions(p);
  fusion::simplify(p);
  const auto kernels = fusion::partition(p, nullptr);
  int statistics = 0;  // row kernels (the innermost dim reduced) of two sums, writing per-row values only
  for (const auto& k : kernels) {
    bool per_row_only = true;
    for (int o : k.outputs) per_row_only &= k.nodes[size_t(o)].per_row;
    statistics +=
        k.kind == fusion::Kernel::Kind::Reduction && k.reduced.back() && k.reduces.size() == 2 && per_row_only;
  }
  EXPECT_EQ(statistics, 1);
  EXPECT_EQ(kernels.size(), 4u);  // statistics, GELU's value and gradient, dx's rows, the columns
  Tensor row_sums = x.grad().sum(1).detach();
  EXPECT_TRUE(allclose(row_sums, zeros({16}), 1e-4, 1e-4));
}

// A flush orders its plan by one walk back over the nodes its thread recorded; a search from the
// roots (for nodes recorded elsewhere) must give the same plan, or a step's partition would
// depend on which thread traced it: constants first (roots among them first, then the others in
// the order they are first read), then the nodes with inputs in traced order. Nodes that died
// before the flush stay in the recorded list and must be passed over.
TEST(Passes, PlansFromTheRecordedNodesAndFromASearchAgree) {
  kiln::sync();
  Tensor x = rand({4});
  kiln::sync();  // x is computed: a leaf the plan reads, not a step
  Tensor a = x * 2 + 1;
  Tensor dead = (a.exp() * 3).sum();  // dies below, recorded before the nodes that follow
  Tensor b = (3.0 - a).tanh();        // a constant read as the first operand
  Tensor c = a * b - x;
  Tensor only_held = full({3}, 7.0);  // a constant no step reads
  dead = Tensor();
  std::vector<ir::NodePtr> roots;
  for (const Tensor* t : {&c, &only_held, &a}) roots.push_back(t->unsafeGetTensorImpl()->storage->node);
  const fusion::Plan searched = fusion::make_plan(roots);
  const uint64_t searches = fusion::plans_searched_instead();
  const fusion::Plan walked = fusion::make_plan(roots, &tracer::recorded_nodes());
  EXPECT_EQ(fusion::plans_searched_instead(), searches);  // the walk was taken
  ASSERT_EQ(walked.steps.size(), searched.steps.size());
  const auto& steps = walked.steps;
  uint64_t last_seq = 0;
  size_t constants = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(steps[i].node, searched.steps[i].node);
    EXPECT_EQ(steps[i].is_root, searched.steps[i].is_root);
    EXPECT_EQ(steps[i].owner->get(), steps[i].node);
    if (steps[i].node->inputs.empty()) {
      EXPECT_EQ(constants++, i);  // all before the first node with inputs
      continue;
    }
    EXPECT_GT(steps[i].node->seq, last_seq);
    last_seq = steps[i].node->seq;
  }
  EXPECT_GE(constants, 3u);  // 7 (a root), then 2, 1 and 3 as read (a cached one may be computed)
  EXPECT_EQ(steps.front().node, only_held.unsafeGetTensorImpl()->storage->node.get());
  EXPECT_TRUE(steps.front().is_root);
  EXPECT_EQ(count(walked, ir::Op::Exp), 0u);
  EXPECT_EQ(count(walked, ir::Op::Tanh), 1u);
  EXPECT_TRUE(allclose(c, (x * 2 + 1) * (3.0 - (x * 2 + 1)).tanh() - x));
}

// A pending node another thread recorded is not in this thread's list: the flush searches from
// the roots instead, and computes both threads' nodes.
TEST(Passes, NodesRecordedOnAnotherThreadAreSearchedFor) {
  kiln::sync();
  Tensor made;
  std::thread maker([&] { made = arange(4, kFloat) * 3; });  // left pending on that thread
  maker.join();
  Tensor y = (made + 1).exp();
  const uint64_t searches = fusion::plans_searched_instead();
  EXPECT_NEAR(y.sum().item<double>(), std::exp(1.0) + std::exp(4.0) + std::exp(7.0) + std::exp(10.0), 1e-2);
  EXPECT_EQ(fusion::plans_searched_instead(), searches + 1);
  Tensor z = y * 2;  // y is computed now: this thread's list has all z needs
  EXPECT_NEAR(z.sum().item<double>(), 2 * (std::exp(1.0) + std::exp(4.0) + std::exp(7.0) + std::exp(10.0)), 2e-2);
  EXPECT_EQ(fusion::plans_searched_instead(), searches + 1);
}
