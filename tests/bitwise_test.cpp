// Bitwise ops and shifts, floor_divide and div's rounding modes, against libtorch 1.13: the
// values and dtypes below were printed by a libtorch program, and each runs on the interpreter and
// on fused Halide kernels.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <limits>

#include "backend_guard.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace {

using kiln::ScalarType;
using torch::Tensor;

std::vector<int64_t> longs(const Tensor& t) { return t.to(torch::kLong).to_vector<int64_t>(); }

struct Case {
  const char* what;
  Tensor got;
  ScalarType dtype;
  std::vector<int64_t> values;
};

void expect_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    EXPECT_EQ(c.got.dtype(), c.dtype) << c.what;
    EXPECT_EQ(longs(c.got), c.values) << c.what;
  }
}

class Bitwise : public ::testing::TestWithParam<const char*> {};

TEST_P(Bitwise, ValuesAndDtypesAreLibtorchs) {
  BackendGuard backend(GetParam());
  const Tensor a = torch::tensor({-8, -3, 0, 5, 12, 127}, torch::kInt);
  const Tensor b = torch::tensor({3, 1, 7, 2, 5, 1}, torch::kInt);
  const Tensor l = torch::tensor({-8, -3, 0, 5, 12, 127}, torch::kLong);
  const Tensor c8 = torch::tensor({-128, -3, 1, 5, 64, 127}, torch::kInt8);
  const Tensor u8 = torch::tensor({0, 3, 128, 255, 1, 7}, torch::kUInt8);
  const Tensor bo = torch::tensor({true, false, true, false, true, true});
  const Tensor bo2 = torch::tensor({true, true, false, false, true, false});
  const ScalarType kInt = torch::kInt, kLong = torch::kLong, kBool = torch::kBool;
  expect_cases({
      {"bitwise_and", torch::bitwise_and(a, b), kInt, {0, 1, 0, 0, 4, 1}},
      {"|", a | b, kInt, {-5, -3, 7, 7, 13, 127}},
      {"^", a ^ b, kInt, {-5, -4, 7, 7, 9, 126}},
      {"~", ~a, kInt, {7, 2, -1, -6, -13, -128}},
      {"bitwise_not", torch::bitwise_not(a), kInt, {7, 2, -1, -6, -13, -128}},
      {"bool &", bo & bo2, kBool, {1, 0, 0, 0, 1, 0}},
      {"bool |", bo | bo2, kBool, {1, 1, 1, 0, 1, 1}},
      {"bool ^", bo ^ bo2, kBool, {0, 1, 1, 0, 0, 1}},
      {"bool ~", ~bo, kBool, {0, 1, 0, 1, 0, 0}},
      {"int32 & 6", a & 6, kInt, {0, 4, 0, 4, 4, 6}},
      {"bool & 1", bo & 1, kLong, {1, 0, 1, 0, 1, 1}},
      {"bool & true", bo & true, kBool, {1, 0, 1, 0, 1, 1}},
      {"uint8 & 15", u8 & 0x0f, torch::kUInt8, {0, 3, 0, 15, 1, 7}},
      {"int8 ^ -1", c8 ^ -1, torch::kInt8, {127, 2, -2, -6, -65, -128}},
      {"uint8 ~", ~u8, torch::kUInt8, {255, 252, 127, 0, 254, 248}},
      {"int8 ~", ~c8, torch::kInt8, {127, 2, -2, -6, -65, -128}},
      {"int32 & int64", a & l, kLong, {-8, -3, 0, 5, 12, 127}},
      {"int8 | uint8", c8 | u8, torch::kInt16, {-128, -1, 129, 255, 65, 127}},
      {"bool | int32", bo | a, kInt, {-7, -3, 1, 5, 13, 127}},
      {"__lshift__ 3", a.__lshift__(3), kInt, {-64, -24, 0, 40, 96, 1016}},
      {"__rshift__ 1", a.__rshift__(1), kInt, {-4, -2, 0, 2, 6, 63}},
      {"int8 << 1", c8.__lshift__(1), torch::kInt8, {0, -6, 2, 10, -128, -2}},
      {"int8 << 9", c8.__lshift__(9), torch::kInt8, {0, 0, 0, 0, 0, 0}},
      {"int8 >> 9", c8.__rshift__(9), torch::kInt8, {-1, -1, 0, 0, 0, 0}},
      {"uint8 << 1", u8.__lshift__(1), torch::kUInt8, {0, 6, 0, 254, 2, 14}},
      {"uint8 >> 9", u8.__rshift__(9), torch::kUInt8, {0, 0, 0, 0, 0, 0}},
      {"left shift by a tensor", torch::bitwise_left_shift(a, b), kInt, {-64, -6, 0, 20, 384, 254}},
      {"right shift by a tensor", torch::bitwise_right_shift(a, b), kInt, {-1, -2, 0, 1, 0, 63}},
      {"bool >> 1", bo.__rshift__(1), kLong, {0, 0, 0, 0, 0, 0}},
      {"left shift by a number", torch::bitwise_left_shift(a, 2), kInt, {-32, -12, 0, 20, 48, 508}},
      {"a number shifted", torch::bitwise_left_shift(2, a.abs().remainder(5)), kInt, {16, 16, 2, 2, 8, 8}},
      {"bitwise_xor with a number", torch::bitwise_xor(a, 3), kInt, {-5, -2, 3, 6, 15, 124}},
      {"method", a.bitwise_and(b), kInt, {0, 1, 0, 0, 4, 1}},
      {"__and__", a.__and__(b), kInt, {0, 1, 0, 0, 4, 1}},
      {"__or__", a.__or__(3), kInt, {-5, -1, 3, 7, 15, 127}},
      {"__xor__", a.__xor__(b), kInt, {-5, -4, 7, 7, 9, 126}},
      {"__rshift__ 2", a.__rshift__(2), kInt, {-2, -1, 0, 1, 3, 31}},
      // Counts within each dtype's width (libtorch 1.13 masks wider counts as x86 does, C++'s
      // undefined behaviour; kiln gives 0 or -1 there, as libtorch 2 defines them: below).
      {"int8 << counts",
       torch::bitwise_left_shift(c8, torch::tensor({0, 1, 7, 8, 1, 2}, torch::kInt8)),
       torch::kInt8,
       {-128, -6, -128, 0, -128, -4}},
      {"int8 >> counts",
       torch::bitwise_right_shift(c8, torch::tensor({0, 1, 7, 8, 1, 2}, torch::kInt8)),
       torch::kInt8,
       {-128, -2, 0, 0, 32, 31}},
      {"uint8 >> counts",
       torch::bitwise_right_shift(u8, torch::tensor({0, 1, 7, 8, 7, 1}, torch::kUInt8)),
       torch::kUInt8,
       {0, 1, 1, 0, 0, 3}},
  });
  // In place, chained, as libtorch: and_, not_, left_shift_, __iand__, __ilshift__, __ior__,
  // __ixor__, __irshift__; an int32 self keeps its dtype with an int64 operand.
  Tensor x = a.clone();
  x.bitwise_and_(b);
  EXPECT_EQ(longs(x), (std::vector<int64_t>{0, 1, 0, 0, 4, 1}));
  x.bitwise_not_();
  EXPECT_EQ(longs(x), (std::vector<int64_t>{-1, -2, -1, -1, -5, -2}));
  x.bitwise_left_shift_(1);
  x.__iand__(3);
  x.__ilshift__(2);
  EXPECT_EQ(longs(x), (std::vector<int64_t>{8, 0, 8, 8, 8, 0}));
  x.__ior__(1);
  x.__ixor__(2);
  x.__irshift__(1);
  EXPECT_EQ(longs(x), (std::vector<int64_t>{5, 1, 5, 5, 5, 1}));
  x.bitwise_and_(l);
  EXPECT_EQ(x.dtype(), kInt);
}

// Shift counts outside [0, 63]: 0, or -1 for a negative number shifted right (libtorch 2's
// definition; 1.13 gave whatever x86's masked shift gives). Within [width, 63] a narrow dtype's
// result is its int64 result wrapped, as libtorch's promoted C++ shift gives.
TEST_P(Bitwise, ShiftsByCountsOutOfRangeAreDefined) {
  BackendGuard backend(GetParam());
  const Tensor l = torch::tensor({-8, -3, 5, 12, 127, -1}, torch::kLong);
  const Tensor counts = torch::tensor({64, 70, -1, -2, 63, 1000}, torch::kLong);
  EXPECT_EQ(longs(torch::bitwise_left_shift(l, counts)), (std::vector<int64_t>{0, 0, 0, 0, INT64_MIN, 0}));
  EXPECT_EQ(longs(torch::bitwise_right_shift(l, counts)), (std::vector<int64_t>{-1, -1, 0, 0, 0, -1}));
  const Tensor i = torch::tensor({5, -5}, torch::kInt);
  EXPECT_EQ(longs(i.__lshift__(32)), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(longs(i.__rshift__(40)), (std::vector<int64_t>{0, -1}));
}

// A chain of them with arithmetic fuses into one kernel and equals the interpreter's answer.
TEST_P(Bitwise, FusedChainsMatchTheInterpreter) {
  BackendGuard backend(GetParam());
  const Tensor a = torch::arange(-50, 50, torch::kLong).reshape({10, 10});
  // b transposed: the kernel reads it in tiles (codegen/halide/schedule.cpp, schedule_tiles).
  const Tensor b = (torch::arange(0, 100, torch::kLong) * 37).remainder(101).reshape({10, 10}).t();
  const Tensor got = (((a & b) | a.__lshift__(b & 7)) ^ ~b) + (a.__rshift__(2) & 3) * 5;
  std::vector<int64_t> want;
  const auto av = a.contiguous().to_vector<int64_t>(), bv = b.contiguous().to_vector<int64_t>();
  for (size_t k = 0; k < av.size(); ++k) {
    const int64_t x = av[k], y = bv[k];
    want.push_back((((x & y) | int64_t(uint64_t(x) << (y & 7))) ^ ~y) + ((x >> 2) & 3) * 5);
  }
  EXPECT_EQ(longs(got), want);
  const Tensor i16 = a.to(torch::kInt16), mask = a > 0;
  EXPECT_EQ(longs((i16 ^ 0x5555) & ~i16), longs(((a.to(torch::kInt16) ^ 0x5555) & ~a.to(torch::kInt16))));
  EXPECT_EQ(longs((mask ^ (b > 40)) | ~mask), longs(torch::logical_or((a > 0) != (b > 40), (a > 0).logical_not())));
}

INSTANTIATE_TEST_SUITE_P(Backends, Bitwise, ::testing::Values("interp", "halide"));

TEST(BitwiseErrors, FloatsAndBoolShiftsThrowAsLibtorch) {
  const Tensor f = torch::tensor({1.0, 2.0}), i = torch::tensor({1, 2}, torch::kInt), bo = torch::tensor({true, false});
  EXPECT_THROW_WITH(f & f, "bitwise_and: not implemented for float32 ([2] float32 and [2] float32)");
  EXPECT_THROW_WITH(f | 1, "bitwise_or: not implemented for float32");
  EXPECT_THROW_WITH(f ^ f, "bitwise_xor: not implemented for float32");
  EXPECT_THROW_WITH(~f, "bitwise_not: not implemented for float32 ([2] float32)");
  EXPECT_THROW_WITH(f.__lshift__(1), "bitwise_left_shift: not implemented for float32");
  EXPECT_THROW_WITH(f.__rshift__(f), "bitwise_right_shift: not implemented for float32");
  EXPECT_THROW_WITH(i & 1.5, "bitwise_and: not implemented for float32");  // an int and a float: float
  EXPECT_THROW_WITH(i.__lshift__(1.5), "bitwise_left_shift: not implemented for float32");
  EXPECT_THROW_WITH(bo.__lshift__(bo), "bitwise_left_shift: not implemented for bool ([2] bool and [2] bool)");
  EXPECT_THROW_WITH(i & torch::ones({3}, torch::kInt), "bitwise_and: the size of tensor a (2) must match");
  Tensor b = bo.clone();
  EXPECT_THROW_WITH(b.bitwise_and_(i), "bitwise_and_: result type int32 can't be cast to the desired output type bool");
  Tensor x = i.clone();
  EXPECT_THROW_WITH(x.bitwise_or_(i.view({2, 1})), "output with shape [2] doesn't match the broadcast shape [2, 2]");
}

class RoundingDivision : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundingDivision, ValuesAndDtypesAreLibtorchs) {
  BackendGuard backend(GetParam());
  const Tensor a = torch::tensor({-7, -6, 7, 6, 0, -1}, torch::kLong);
  const Tensor b = torch::tensor({2, -4, -2, 4, 3, 5}, torch::kLong);
  const Tensor af = a.to(torch::kFloat) + 0.5, bf = b.to(torch::kFloat);
  const ScalarType kLong = torch::kLong, kFloat = torch::kFloat;
  expect_cases({
      {"floor_divide", torch::floor_divide(a, b), kLong, {-4, 1, -4, 1, 0, -1}},
      {"floor_divide floats", torch::floor_divide(af, bf), kFloat, {-4, 1, -4, 1, 0, -1}},
      {"floor_divide by 2", torch::floor_divide(a, 2), kLong, {-4, -3, 3, 3, 0, -1}},
      {"floor_divide by 2.5", torch::floor_divide(a, 2.5), kFloat, {-3, -3, 2, 2, 0, -1}},
      {"method by -3", a.floor_divide(-3), kLong, {2, 2, -3, -2, 0, 0}},
      {"int32 by int64", torch::floor_divide(a.to(torch::kInt), b), kLong, {-4, 1, -4, 1, 0, -1}},
      {"int8 by 2", torch::floor_divide(a.to(torch::kInt8), 2), torch::kInt8, {-4, -3, 3, 3, 0, -1}},
      {"trunc", torch::div(a, b, "trunc"), kLong, {-3, 1, -3, 1, 0, 0}},
      {"floor", torch::div(a, b, "floor"), kLong, {-4, 1, -4, 1, 0, -1}},
      {"trunc floats", torch::div(af, bf, "trunc"), kFloat, {-3, 1, -3, 1, 0, 0}},
      {"floor floats", torch::div(af, bf, "floor"), kFloat, {-4, 1, -4, 1, 0, -1}},
      {"floor by 2", torch::div(a, 2, "floor"), kLong, {-4, -3, 3, 3, 0, -1}},
      {"floor by 2.5", torch::div(a, 2.5, "floor"), kFloat, {-3, -3, 2, 2, 0, -1}},
      {"method", a.div(b, "floor"), kLong, {-4, 1, -4, 1, 0, -1}},
      {"int8 floor",
       torch::div(a.to(torch::kInt8), torch::tensor({2}, torch::kInt8), "floor"),
       torch::kInt8,
       {-4, -3, 3, 3, 0, -1}},
      // 5.3 / 0.1 rounds to 52.99...: Python's // (fmod's) answers 53, where floor(a / b) is 52.
      {"fmod's quotient",
       torch::div(torch::tensor({5.3, -5.3, 0.3}), torch::tensor({0.1, 0.1, 0.1}), "floor"),
       kFloat,
       {53, -54, 3}},
  });
  EXPECT_EQ(torch::div(af, bf, std::nullopt).dtype(), kFloat);
  // Special values, float64: libtorch 1.13's printed results.
  const double inf = INFINITY, nan = NAN;
  const Tensor x = torch::tensor({-1e-30, 5.0, -5.0, 1e30, inf, -inf, nan, 0.0, -0.0}, torch::kDouble);
  const Tensor y = torch::tensor({3.0, -inf, inf, 1e-30, 2.0, 2.0, 1.0, -3.0, 3.0}, torch::kDouble);
  auto same = [](const Tensor& got, std::vector<double> want, const char* what) {
    const auto g = got.to_vector<double>();
    ASSERT_EQ(g.size(), want.size());
    for (size_t k = 0; k < g.size(); ++k) {
      if (std::isnan(want[k])) {
        EXPECT_TRUE(std::isnan(g[k])) << what << " " << k;
      } else {
        EXPECT_EQ(g[k], want[k]) << what << " " << k;
        EXPECT_EQ(std::signbit(g[k]), std::signbit(want[k])) << what << " " << k;
      }
    }
  };
  same(torch::div(x, y, "floor"), {-1, -1, -1, 1e60, nan, nan, nan, -0.0, -0.0}, "floor");
  same(torch::floor_divide(x, y), {-1, -1, -1, 1e60, nan, nan, nan, -0.0, -0.0}, "floor_divide");
  same(torch::div(x, y, "trunc"), {-0.0, -0.0, -0.0, 1e60, inf, -inf, nan, -0.0, -0.0}, "trunc");
  same(torch::div(x, torch::zeros({9}, torch::kDouble), "floor"), {-inf, inf, -inf, inf, inf, -inf, nan, nan, nan},
       "by zero");
  // In place.
  Tensor z = a.clone();
  z.floor_divide_(b);
  EXPECT_EQ(longs(z), (std::vector<int64_t>{-4, 1, -4, 1, 0, -1}));
  z.div_(2, "floor");
  EXPECT_EQ(longs(z), (std::vector<int64_t>{-2, 0, -2, 0, 0, -1}));
  // Integers by zero give 0 (libtorch throws ZeroDivisionError, which a lazy kernel cannot).
  EXPECT_EQ(longs(torch::floor_divide(a, torch::zeros({6}, kLong))), std::vector<int64_t>(6, 0));
}

INSTANTIATE_TEST_SUITE_P(Backends, RoundingDivision, ::testing::Values("interp", "halide"));

// libtorch gives the rounding modes a zero gradient (DivBackward3), not none.
TEST(RoundingDivisionGradient, IsZero) {
  const Tensor x = torch::tensor({1.5, -2.5, 3.5}, torch::requires_grad());
  const Tensor y = torch::tensor({1.5, -2.5, 0.0}, torch::requires_grad());
  const Tensor r = torch::div(x, 2.0, "floor");
  EXPECT_EQ(r.grad_fn()->name(), "DivBackward3");
  (torch::div(x, y, "trunc").sum() + torch::floor_divide(x, y).sum() + r.sum()).backward();
  EXPECT_EQ(x.grad().to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(y.grad().to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(RoundingDivisionErrors, AsLibtorch) {
  const Tensor a = torch::tensor({1, 2}), bo = torch::tensor({true, false});
  EXPECT_THROW_WITH(torch::div(a, a, "round"),
                    "div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
  EXPECT_THROW_WITH(torch::floor_divide(bo, bo), "floor_divide: not implemented for bool ([2] bool and [2] bool)");
  EXPECT_THROW_WITH(torch::div(bo, bo, "floor"), "div: rounding_mode 'floor' is not implemented for bool");
  Tensor z = a.clone();
  EXPECT_THROW_WITH(z.div_(2.5, "floor"), "div_: result type float32 can't be cast to the desired output type int64");
  EXPECT_THROW_WITH(torch::floor_divide(a, torch::ones({3})), "div: the size of tensor a (2) must match");
}

}  // namespace
