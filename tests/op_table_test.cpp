// tracer/ops.def as the one list of ops: every op has a derivative row or is declared without
// one, a scalar meaning exactly when it is elementwise, and constant folding (fusion/simplify.cpp,
// through ir::scalar_op) computes what the kernels compute.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "frontend/derivatives.h"
#include "tracer/op_scalar.h"

namespace {
std::vector<kiln::ir::Op> every_op() { return {kiln::ir::all_ops(), kiln::ir::all_ops() + kiln::ir::kOpCount}; }

bool elementwise(kiln::ir::Op op) {
  const kiln::ir::OpKind k = kiln::ir::op_kind(op);
  return k == kiln::ir::OpKind::Unary || k == kiln::ir::OpKind::Binary || k == kiln::ir::OpKind::Compare;
}
}  // namespace

TEST(OpTable, EveryOpHasADerivativeRowOrIsDeclaredWithoutOne) {
  for (kiln::ir::Op op : every_op()) {
    const bool row = kiln::detail::derivative(op) != nullptr;
    const bool none = kiln::detail::declared_without_gradient(op);
    EXPECT_TRUE(row != none) << kiln::ir::op_name(op)
                             << (row ? " has a row and is declared without gradient"
                                     : " has no derivative row and is not declared without");
  }
}

TEST(OpTable, ExactlyTheElementwiseOpsHaveAScalarMeaning) {
  for (kiln::ir::Op op : every_op()) {
    if (elementwise(op)) {
      EXPECT_NO_THROW(kiln::ir::scalar_op(op, 0.5, 2.0, kiln::kDouble)) << kiln::ir::op_name(op);
    } else {
      EXPECT_THROW(kiln::ir::scalar_op(op, 0.5, 2.0, kiln::kDouble), kiln::Error) << kiln::ir::op_name(op);
    }
    EXPECT_EQ(kiln::ir::op_name(op), std::string(kiln::ir::facts(op).name));
  }
  // Reductions fold with their combining op, from its identity.
  EXPECT_EQ(kiln::ir::facts(kiln::ir::Op::Sum).combine, kiln::ir::Op::Add);
  EXPECT_EQ(kiln::ir::reduction_identity(kiln::ir::Op::ReduceMax), -INFINITY);
  EXPECT_TRUE(std::isnan(kiln::ir::scalar_op(kiln::ir::Op::Max, NAN, 1.0, kiln::kFloat)));  // NaN wins
}

// Each op the table calls exact, on constants (folded before any kernel runs) and on the same
// values from host data (computed by a kernel): the same bits, in float32 and float64.
// The bitwise ops, which the frontend applies to integers and bools only.
static bool integer_only(kiln::ir::Op op) {
  using kiln::ir::Op;
  return op == Op::BitAnd || op == Op::BitOr || op == Op::BitXor || op == Op::ShiftLeft || op == Op::ShiftRight ||
         op == Op::BitNot;
}

TEST(OpTable, ConstantFoldingGivesTheKernelsBits) {
  using kiln::Tensor;
  const std::vector<double> as = {0.1, -2.5, 3.0, 1e-3, 7.25, -0.0, 1.0 / 3.0},
                            bs = {0.7, 3.1, -1.5, 3.0, 1e30, 2.0, 0.2};
  for (kiln::ScalarType dtype : {kiln::kFloat, kiln::kDouble})
    for (kiln::ir::Op op : every_op()) {
      const kiln::ir::OpKind kind = kiln::ir::op_kind(op);
      if (!kiln::ir::facts(op).has(kiln::ir::kExact) ||
          (kind != kiln::ir::OpKind::Unary && kind != kiln::ir::OpKind::Binary) || op == kiln::ir::Op::Not ||
          op == kiln::ir::Op::Cast || integer_only(op))
        continue;
      for (size_t i = 0; i < as.size(); ++i) {
        auto apply = [&](const Tensor& a, const Tensor& b) {
          return kiln::detail::primitive(
              op, kind == kiln::ir::OpKind::Unary ? kiln::TensorList{a} : kiln::TensorList{a, b}, {1}, dtype);
        };
        const Tensor folded = apply(kiln::full({1}, as[i], dtype), kiln::full({1}, bs[i], dtype));
        const Tensor computed = apply(kiln::tensor({as[i]}, dtype), kiln::tensor({bs[i]}, dtype));
        const double f = folded.item<double>(), c = computed.item<double>();
        EXPECT_TRUE(std::memcmp(&f, &c, sizeof f) == 0 || (std::isnan(f) && std::isnan(c)))
            << kiln::ir::op_name(op) << "(" << as[i] << ", " << bs[i] << ") in " << dtype << ": folded " << f
            << ", computed " << c;
      }
    }
}
