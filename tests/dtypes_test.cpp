// libtorch's narrow dtypes (uint8, int8, int16, int32, float16, bfloat16) through the pipeline:
// promotion as libtorch 1.13 computes it (the tables below were printed by a libtorch program),
// host data in and out, wrapping and rounding, reductions' dtypes, and the fused Halide kernels
// against the interpreter for each dtype.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "backend_guard.h"
#include "expect_error.h"
#include "runtime/config.h"

namespace {

using kiln::ScalarType;

// libtorch's order in the tables: torch.bool, uint8, int8, int16, int32, int64, float16,
// bfloat16, float32, float64.
const ScalarType kOrder[] = {torch::kBool,  torch::kUInt8, torch::kInt8,     torch::kInt16, torch::kInt32,
                             torch::kInt64, torch::kHalf,  torch::kBFloat16, torch::kFloat, torch::kDouble};
// c10::toString of each.
const char* kLibtorchNames[] = {"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double"};

ScalarType by_libtorch_name(const std::string& name) {
  for (int i = 0; i < 10; ++i)
    if (name == kLibtorchNames[i]) return kOrder[i];
  throw std::runtime_error("unknown dtype " + name);
}

using Backend = BackendGuard;  // the interpreter or the Halide backend, restored after

TEST(Dtypes, PromotionTableMatchesLibtorch) {
  // torch::promote_types(row, column), printed by libtorch 1.13.
  const char* table[] = {
      "Bool Byte Char Short Int Long Half BFloat16 Float Double",
      "Byte Byte Short Short Int Long Half BFloat16 Float Double",
      "Char Short Char Short Int Long Half BFloat16 Float Double",
      "Short Short Short Short Int Long Half BFloat16 Float Double",
      "Int Int Int Int Int Long Half BFloat16 Float Double",
      "Long Long Long Long Long Long Half BFloat16 Float Double",
      "Half Half Half Half Half Half Half Float Float Double",
      "BFloat16 BFloat16 BFloat16 BFloat16 BFloat16 BFloat16 Float BFloat16 Float Double",
      "Float Float Float Float Float Float Float Float Float Double",
      "Double Double Double Double Double Double Double Double Double Double",
  };
  for (int i = 0; i < 10; ++i) {
    std::istringstream row(table[i]);
    for (int j = 0; j < 10; ++j) {
      std::string name;
      row >> name;
      EXPECT_EQ(torch::promote_types(kOrder[i], kOrder[j]), by_libtorch_name(name))
          << kOrder[i] << " with " << kOrder[j];
    }
  }
}

TEST(Dtypes, CanCastMatchesLibtorch) {
  // torch::can_cast(row, column): no floating into integer, nothing but bool into bool.
  const char* table[] = {"1111111111", "0111111111", "0111111111", "0111111111", "0111111111",
                         "0111111111", "0000001111", "0000001111", "0000001111", "0000001111"};
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      EXPECT_EQ(torch::can_cast(kOrder[i], kOrder[j]), table[i][j] == '1') << kOrder[i] << " to " << kOrder[j];
}

TEST(Dtypes, NamesAndSizesAreLibtorchs) {
  EXPECT_EQ(torch::tensor({1, 2}, torch::kInt32).toString(), "CPUIntType");
  EXPECT_EQ(torch::tensor({1}, torch::kHalf).toString(), "CPUHalfType");
  EXPECT_EQ(torch::tensor({1}, torch::kBFloat16).toString(), "CPUBFloat16Type");
  EXPECT_EQ(torch::tensor({1}, torch::kInt8).toString(), "CPUCharType");
  EXPECT_EQ(torch::tensor({1}, torch::kInt16).toString(), "CPUShortType");
  EXPECT_EQ(torch::tensor({1}, torch::kUInt8).toString(), "CPUByteType");
  const size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(torch::zeros({3}, kOrder[i]).element_size(), int64_t(sizes[i]));
  std::ostringstream printed;
  printed << torch::tensor({1, 2}, torch::kInt32) << "\n" << torch::tensor({1.5}, torch::kHalf);
  EXPECT_EQ(printed.str(), " 1\n 2\n[ CPUIntType{2} ]\n 1.5000\n[ CPUHalfType{1} ]");
}

// Each case's result as libtorch 1.13 gives it: dtype and first value.
TEST(Dtypes, ResultTypesOfMixedOperandsAreLibtorchs) {
  struct Case {
    const char* what;
    torch::Tensor got;
    ScalarType dtype;
    double value;
  };
  using torch::tensor;
  const Case cases[] = {
      {"int8 + 1000 (a number stays within the tensor's dtype, wrapped)", tensor({1}, torch::kInt8) + 1000,
       torch::kInt8, -23},
      {"int8 + 100", tensor({100}, torch::kInt8) + 100, torch::kInt8, -56},
      {"int32 + 1.5", tensor({1}, torch::kInt32) + 1.5, torch::kFloat, 2.5},
      {"half + 1.5", tensor({1}, torch::kHalf) + 1.5, torch::kHalf, 2.5},
      {"int8 + 0-dim int64", tensor({1}, torch::kInt8) + torch::tensor(int64_t(5)), torch::kInt8, 6},
      {"int8 + 0-dim float64", tensor({1}, torch::kInt8) + torch::tensor(5.0, torch::kDouble), torch::kDouble, 6},
      {"half + 0-dim float64", tensor({1}, torch::kHalf) + torch::tensor(5.0, torch::kDouble), torch::kHalf, 6},
      {"uint8 + int8", tensor({200}, torch::kUInt8) + tensor({1}, torch::kInt8), torch::kInt16, 201},
      {"uint8 - 1", tensor({0}, torch::kUInt8) - 1, torch::kUInt8, 255},
      {"int32 / int32 (true division)", tensor({7}, torch::kInt32) / tensor({2}, torch::kInt32), torch::kFloat, 3.5},
      {"half / half", tensor({7}, torch::kHalf) / tensor({3}, torch::kHalf), torch::kHalf, 2.333984375},
      {"bfloat16 + half", tensor({1}, torch::kBFloat16) + tensor({1}, torch::kHalf), torch::kFloat, 2},
      {"int8 fmod", torch::fmod(tensor({-7}, torch::kInt8), tensor({2}, torch::kInt8)), torch::kInt8, -1},
      {"int8 remainder (the divisor's sign)", torch::remainder(tensor({-7}, torch::kInt8), tensor({2}, torch::kInt8)),
       torch::kInt8, 1},
      {"int8 * true", tensor({3}, torch::kInt8) * true, torch::kInt8, 3},
      {"bool + 1", tensor({true}) + 1, torch::kLong, 2},
      {"int8 sign", tensor({-3}, torch::kInt8).sign(), torch::kInt8, -1},
      {"maximum(uint8, int8)", torch::maximum(tensor({200}, torch::kUInt8), tensor({-1}, torch::kInt8)), torch::kInt16,
       200},
      {"where(bool, int8, float)", torch::where(tensor({true}), tensor({1}, torch::kInt8), tensor({1.0})),
       torch::kFloat, 1},
      {"int32 matmul", tensor({{1, 2}}, torch::kInt32).matmul(tensor({{1}, {2}}, torch::kInt32)), torch::kInt32, 5},
      {"exp of int32", tensor({1, 2}, torch::kInt32).exp(), torch::kFloat, std::exp(1.0f)},
      {"int8 < 1000", tensor({3}, torch::kInt8) < 1000, torch::kBool, 0},
      {"int8 argmax", tensor({1, 3}, torch::kInt8).argmax(), torch::kLong, 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.got.dtype(), c.dtype) << c.what;
    EXPECT_EQ(c.got.flatten()[0].item<double>(), c.value) << c.what;
  }
  EXPECT_EQ(torch::result_type(torch::tensor({3}, torch::kInt8), 1000), torch::kInt8);
  EXPECT_EQ(torch::result_type(torch::tensor({3}, torch::kInt8), 1.5), torch::kFloat);
  EXPECT_EQ(torch::result_type(torch::tensor({3}, torch::kHalf), torch::tensor({1}, torch::kInt32)), torch::kHalf);
}

TEST(Dtypes, IntegersWrapAtTheirWidth) {
  using torch::tensor;
  EXPECT_EQ((tensor({100}, torch::kInt8) * tensor({3}, torch::kInt8)).item<int64_t>(), 44);
  EXPECT_EQ((tensor({2147483647}, torch::kInt32) + 1).item<int64_t>(), -2147483648LL);
  EXPECT_EQ((tensor({-32768}, torch::kInt16) - 1).item<int64_t>(), 32767);
  EXPECT_EQ(tensor({-128}, torch::kInt8).abs().item<int64_t>(), -128);  // as libtorch
  EXPECT_EQ((-tensor({1}, torch::kUInt8)).item<int64_t>(), 255);
  EXPECT_EQ(tensor({3}, torch::kInt8).pow(5).item<int64_t>(), -13);  // 243 wrapped, as libtorch
  // Casts, as libtorch on x86: int64 and float to narrow types wrap; a float beyond int32 gives
  // INT32_MIN.
  EXPECT_EQ(tensor({int64_t(300)}).to(torch::kInt8).item<int64_t>(), 44);
  EXPECT_EQ(tensor({int64_t(70000)}).to(torch::kInt16).item<int64_t>(), 4464);
  EXPECT_EQ(tensor({300.0}).to(torch::kInt8).item<int64_t>(), 44);
  EXPECT_EQ(tensor({-1.0}).to(torch::kUInt8).item<int64_t>(), 255);
  EXPECT_EQ(tensor({3e9}).to(torch::kInt32).item<int64_t>(), -2147483648LL);
  EXPECT_EQ(tensor({-7.9}).to(torch::kInt32).item<int64_t>(), -7);
}

// A float cast to int32 or int64 and then to a narrower integer wraps in a fused kernel as node
// by node (Halide's simplifier folded the casts into one float to uint8 conversion, which gave 0
// for negative values).
TEST(Dtypes, FloatsCastThroughWiderIntegersWrapInFusedKernels) {
  for (const char* backend : {"interp", "halide"}) {
    Backend on(backend);
    const torch::Tensor x = torch::tensor({-30.0, -37.0, -44.0, 51.0});
    EXPECT_EQ(x.to(torch::kInt32).to(torch::kUInt8).to_vector<int64_t>(), (std::vector<int64_t>{226, 219, 212, 51}))
        << backend;
    EXPECT_EQ(x.to(torch::kLong).to(torch::kUInt8).to_vector<int64_t>(), (std::vector<int64_t>{226, 219, 212, 51}))
        << backend;
    EXPECT_EQ((x * 5).to(torch::kInt32).to(torch::kInt8).to_vector<int64_t>(), (std::vector<int64_t>{106, 71, 36, -1}))
        << backend;
  }
}

TEST(Dtypes, HalfAndBFloat16RoundToNearestEven) {
  using torch::tensor;
  EXPECT_EQ(tensor({0.1}, torch::kHalf).item<double>(), 0.0999755859375);
  EXPECT_EQ(tensor({0.1}, torch::kBFloat16).item<double>(), 0.10009765625);
  EXPECT_EQ(tensor({1.00390625}, torch::kBFloat16).item<double>(), 1.0);       // a tie: to even
  EXPECT_EQ(tensor({1.01171875}, torch::kBFloat16).item<double>(), 1.015625);  // a tie: to even, up
  EXPECT_EQ(tensor({2049.0}, torch::kHalf).item<double>(), 2048.0);
  EXPECT_EQ(tensor({2051.0}, torch::kHalf).item<double>(), 2052.0);
  EXPECT_EQ(tensor({65504.0}, torch::kHalf).item<double>(), 65504.0);
  EXPECT_EQ(tensor({5.960464477539063e-08}, torch::kHalf).item<double>(), 5.960464477539063e-08);  // subnormal
  EXPECT_TRUE(std::isinf((tensor({60000.0}, torch::kHalf) * 2).item<double>()));                   // overflow
  EXPECT_TRUE(std::isnan(tensor({NAN}, torch::kBFloat16).item<double>()));
  // Arithmetic rounds each result: 2048 + 1 is 2048 in float16.
  EXPECT_EQ((tensor({2048.0}, torch::kHalf) + 1).item<double>(), 2048.0);
  EXPECT_EQ((tensor({256.0}, torch::kBFloat16) + 1).item<double>(), 256.0);
  // Casts both ways: float32 -> float16 -> float32 keeps 11 bits.
  EXPECT_EQ(tensor({1.0f / 3}).to(torch::kHalf).to(torch::kFloat).item<float>(), 0.333251953125f);
  EXPECT_EQ(tensor({1.0f / 3}).to(torch::kBFloat16).to(torch::kDouble).item<double>(), 0.333984375);
  EXPECT_EQ(tensor({int64_t(2049)}).to(torch::kHalf).item<double>(), 2048.0);
  EXPECT_EQ(tensor({2.75}, torch::kHalf).to(torch::kInt8).item<int64_t>(), 2);
}

TEST(Dtypes, ReductionsGiveLibtorchsDtypes) {
  using torch::tensor;
  auto sum8 = tensor({100, 100}, torch::kInt8).sum();
  EXPECT_EQ(sum8.dtype(), torch::kLong);
  EXPECT_EQ(sum8.item<int64_t>(), 200);
  EXPECT_EQ(tensor({200, 200}, torch::kUInt8).sum().item<int64_t>(), 400);
  EXPECT_EQ(tensor({true, true}).sum().dtype(), torch::kLong);
  auto prod8 = tensor({100, 100}, torch::kInt8).prod();
  EXPECT_EQ(prod8.dtype(), torch::kLong);
  EXPECT_EQ(prod8.item<int64_t>(), 10000);
  EXPECT_EQ(tensor({100, 7}, torch::kInt8).max().dtype(), torch::kInt8);
  EXPECT_EQ(tensor({1, 2}, torch::kHalf).sum().dtype(), torch::kHalf);
  auto mean = tensor({1, 2}, torch::kHalf).mean();
  EXPECT_EQ(mean.dtype(), torch::kHalf);
  EXPECT_EQ(mean.item<double>(), 1.5);
  EXPECT_EQ(torch::sum(tensor({1, 2}, torch::kInt32), {0}, false, torch::kInt32).dtype(), torch::kInt32);
  EXPECT_THROW_WITH(tensor({1, 2}, torch::kInt32).mean(), "mean");
  EXPECT_THROW_WITH(tensor({1, 2}, torch::kInt32).mean(), "int32");
}

TEST(Dtypes, HostDataInAndOut) {
  auto t = torch::tensor({1, -2, 3}, torch::kInt32);
  int32_t* p = t.data_ptr<int32_t>();
  EXPECT_EQ(p[1], -2);
  p[1] = 40000;
  EXPECT_EQ((t * 2).to_vector<int64_t>(), (std::vector<int64_t>{2, 80000, 6}));
  EXPECT_THROW_WITH(t.data_ptr<int16_t>(), "int16");

  int16_t shorts[] = {1, -1, 32767};
  auto s = torch::from_blob(shorts, {3}, torch::kInt16);
  EXPECT_EQ((s + 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, -32768}));

  auto h = torch::tensor({0.5, -2.0}, torch::kHalf);
  EXPECT_EQ(float(h.data_ptr<torch::Half>()[1]), -2.0f);
  EXPECT_EQ(float(h[0].item<torch::Half>()), 0.5f);
  EXPECT_EQ(float(torch::tensor({3.0}, torch::kBFloat16).item<torch::BFloat16>()), 3.0f);
  EXPECT_EQ(torch::tensor({7}, torch::kUInt8).item<uint8_t>(), 7);
  EXPECT_EQ(torch::tensor({-7}, torch::kInt8).item<int8_t>(), -7);
  EXPECT_EQ(torch::tensor({7}, torch::kInt8).item().toLong(), 7);
}

TEST(Dtypes, SafetensorsKeepNarrowDtypes) {
  const std::string path = ::testing::TempDir() + "dtypes_test.safetensors";
  kiln::StateDict saved;
  saved.insert("h", torch::tensor({0.1, -3.0}, torch::kHalf));
  saved.insert("bf", torch::tensor({0.1, 7.0}, torch::kBFloat16));
  saved.insert("i8", torch::tensor({-128, 127}, torch::kInt8));
  saved.insert("u8", torch::tensor({0, 255}, torch::kUInt8));
  saved.insert("i16", torch::tensor({-300, 300}, torch::kInt16));
  saved.insert("i32", torch::tensor({-70000, 70000}, torch::kInt32));
  kiln::save_safetensors(saved, path);
  auto loaded = kiln::load_safetensors(path);
  for (const auto& item : saved) {
    const torch::Tensor& back = loaded[item.key()];
    EXPECT_EQ(back.dtype(), item.value().dtype()) << item.key();
    EXPECT_EQ(back.to_vector<double>(), item.value().to_vector<double>()) << item.key();
  }
}

// One program per dtype, fused into Halide kernels: bit for bit the interpreter's (each node's
// result rounded to the dtype on both), and no kernel left to the interpreter.
TEST(Dtypes, FusedKernelsMatchTheInterpreterForEveryDtype) {
  auto program = [](ScalarType t) {
    torch::manual_seed(7);
    const bool floating = kiln::is_floating(t);
    torch::Tensor a = floating ? (torch::rand({5, 37}) * 8 - 4).to(t) : torch::randint(-120, 120, {5, 37}).to(t);
    torch::Tensor b = floating ? (torch::rand({37}) * 3 + 0.5).to(t) : torch::randint(1, 100, {37}).to(t);
    torch::Tensor x = a * b + a - b * 3;  // wraps or rounds at every node
    torch::Tensor y = torch::maximum(x, a).abs() + 1;
    torch::Tensor z = torch::where(x > y, x, y * 2);
    std::vector<torch::Tensor> out{x, y, z, z.sum(1), z.amax(0), x.to(torch::kFloat), a.to(torch::kInt8)};
    if (floating) out.push_back((x / (b + 1)).exp().sum(0));
    std::vector<std::vector<double>> values;
    for (auto& o : out) values.push_back(o.to_vector<double>());
    return values;
  };
  const ScalarType types[] = {torch::kUInt8, torch::kInt8, torch::kInt16,   torch::kInt32,
                              torch::kInt64, torch::kHalf, torch::kBFloat16};
  kiln::reset_stats();
  for (ScalarType t : types) {
    std::vector<std::vector<double>> expected, got;
    {
      Backend interp("interp");
      expected = program(t);
    }
    {
      Backend halide("halide");
      got = program(t);
    }
    ASSERT_EQ(expected.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (kiln::is_floating(t) && i + 1 == got.size()) {  // exp: float32 polynomials against libm
        for (size_t j = 0; j < got[i].size(); ++j)
          EXPECT_NEAR(got[i][j], expected[i][j], 2e-2 * std::fabs(expected[i][j])) << t << " output " << i;
        continue;
      }
      EXPECT_EQ(got[i], expected[i]) << t << " output " << i;
    }
  }
  EXPECT_EQ(kiln::stats().kernels_failed, 0);
}

// float16 training: a small MLP's gradients in half are float32's, within float16's precision.
TEST(Dtypes, HalfMlpGradientsAreCloseToFloat32s) {
  torch::manual_seed(3);
  torch::Tensor w1 = torch::randn({8, 16}) * 0.3, w2 = torch::randn({16, 4}) * 0.3;
  torch::Tensor x = torch::randn({32, 8}), target = torch::randn({32, 4});
  auto grads = [&](ScalarType t) {
    torch::Tensor a = w1.to(t).detach().requires_grad_(), b = w2.to(t).detach().requires_grad_();
    torch::Tensor loss = ((torch::relu(x.to(t).matmul(a)).matmul(b) - target.to(t)).pow(2)).mean();
    loss.backward();
    EXPECT_EQ(a.grad().dtype(), t);
    return std::make_pair(a.grad().to(torch::kFloat), b.grad().to(torch::kFloat));
  };
  auto [f1, f2] = grads(torch::kFloat);
  for (ScalarType t : {torch::kHalf, torch::kBFloat16}) {
    auto [h1, h2] = grads(t);
    const double tolerance = t == torch::kHalf ? 0.02 : 0.1;
    EXPECT_LT((h1 - f1).abs().max().item<double>(), tolerance * f1.abs().max().item<double>()) << t;
    EXPECT_LT((h2 - f2).abs().max().item<double>(), tolerance * f2.abs().max().item<double>()) << t;
  }
}

TEST(Dtypes, BadInputsNameTheOpAndDtypes) {
  EXPECT_THROW_WITH(torch::tensor({1, 2}, torch::kInt8).requires_grad_(), "requires_grad_");
  EXPECT_THROW_WITH(torch::tensor({1, 2}, torch::kInt16).mean(), "mean");
  auto ints = torch::tensor({1, 2}, torch::kInt32);
  EXPECT_THROW_WITH(ints.add_(torch::tensor({0.5, 0.5}, torch::kHalf)), "float16");
  EXPECT_THROW_WITH(ints.add_(torch::tensor({0.5, 0.5}, torch::kHalf)), "int32");
}

}  // namespace
