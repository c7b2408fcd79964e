// Differences from libtorch 1.13 found by running one program against both (twenty-first session
// on): each test is a program whose libtorch output is written into it.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "ops_test_util.h"

using kiln::Tensor;
using ops_test::near;
using ops_test::vals;

TEST(OpsLibtorchParity, VarAndStdTakeAnIntegerAsADim) {
  const Tensor m = kiln::arange(6, kiln::kFloat).reshape({2, 3});
  EXPECT_EQ(m.var(1).sizes().vec(), std::vector<int64_t>({2}));
  EXPECT_EQ(m.var(1).to_vector<float>(), std::vector<float>({1, 1}));
  EXPECT_EQ(m.var({1}).to_vector<float>(), std::vector<float>({1, 1}));
  EXPECT_EQ(kiln::var(m, 1).to_vector<float>(), std::vector<float>({1, 1}));
  EXPECT_NEAR(m.std(0).to_vector<float>()[0], 2.1213203f, 1e-6);
  EXPECT_EQ(m.std(0).sizes().vec(), std::vector<int64_t>({3}));
  // A bool is the flag, over every element: 17.5 / 6 and / 5.
  EXPECT_NEAR(m.var(false).item<float>(), 17.5f / 6, 1e-6);
  EXPECT_NEAR(m.var(true).item<float>(), 3.5f, 1e-6);
  EXPECT_NEAR(m.var().item<float>(), 3.5f, 1e-6);
  EXPECT_NEAR(kiln::std(m, false).item<float>(), std::sqrt(17.5f / 6), 1e-6);
}

TEST(OpsLibtorchParity, WritesThroughDataPtrAreRead) {
  Tensor z = kiln::zeros({2});
  z.data_ptr<float>()[0] = 5;
  EXPECT_EQ((z * 1).to_vector<float>(), std::vector<float>({5, 0}));
  Tensor e = kiln::empty({2});
  float* p = e.data_ptr<float>();
  p[0] = 5;
  p[1] = 6;
  EXPECT_EQ((e * 1).to_vector<float>(), std::vector<float>({5, 6}));
  Tensor three = kiln::ones({2}) * 3;
  three.data_ptr<float>()[0] = 5;
  EXPECT_EQ((three + 0).to_vector<float>(), std::vector<float>({5, 3}));
  Tensor t = kiln::zeros({2});
  t.data_ptr<float>()[1] = 7;
  t.add_(1);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>({1, 8}));
  // What was recorded before the pointer was taken reads the values before the write.
  Tensor before = kiln::ones({2});
  Tensor doubled = before * 2;
  before.data_ptr<float>()[0] = 10;
  EXPECT_EQ(doubled.to_vector<float>(), std::vector<float>({2, 2}));
  EXPECT_EQ(before.to_vector<float>(), std::vector<float>({10, 1}));
  // Another zeros() is not touched.
  EXPECT_EQ(kiln::zeros({2}).to_vector<float>(), std::vector<float>({0, 0}));
}

TEST(OpsLibtorchParity, NormLinspaceAndScalarTensor) {
  EXPECT_EQ(kiln::tensor({0.0f, 2.0f, -1.0f}).norm(0).item<float>(), 2.0f);
  EXPECT_EQ(kiln::tensor({{0.0f, 2.0f, -1.0f}, {1.0f, 1.0f, 1.0f}}).norm(0, {1}).to_vector<float>(),
            std::vector<float>({2, 3}));
  EXPECT_EQ(kiln::linspace(2, 5, 1).to_vector<float>(), std::vector<float>({2}));
  EXPECT_EQ(kiln::linspace(2, 5, 2).to_vector<float>(), std::vector<float>({2, 5}));
  EXPECT_EQ(kiln::scalar_tensor(2).item<float>(), 2.0f);
}

// libtorch's std and norm backward give 0 where the result is 0; the root's own derivative there
// is infinite, and its product with a zero gradient was NaN.
TEST(OpsLibtorchParity, StdAndNormGradientsAtZero) {
  Tensor z = kiln::zeros({2}, kiln::requires_grad());
  z.norm().backward();
  EXPECT_EQ(z.grad().to_vector<float>(), std::vector<float>({0, 0}));
  Tensor rows = kiln::tensor({{0.0f, 0.0f}, {3.0f, 4.0f}}).requires_grad_();
  rows.norm(2, {1}).sum().backward();
  EXPECT_EQ(rows.grad().to_vector<float>(), std::vector<float>({0, 0, 0.6f, 0.8f}));
  Tensor cubes = kiln::zeros({2}, kiln::requires_grad());
  cubes.norm(3).backward();
  EXPECT_EQ(cubes.grad().to_vector<float>(), std::vector<float>({0, 0}));
  Tensor c = kiln::ones({3}, kiln::requires_grad());
  c.std().backward();
  EXPECT_EQ(c.grad().to_vector<float>(), std::vector<float>({0, 0, 0}));
  EXPECT_EQ(c.std().item<float>(), 0.0f);
}

// std and norm test their result against 0 (see root_with_zero_gradient_at_zero): data with a
// NaN gives NaN, not 0.
TEST(OpsLibtorchParity, StdAndNormOfDataWithANaN) {
  EXPECT_TRUE(std::isnan(kiln::tensor({std::nanf(""), 1.0f, 2.0f}).std().item<float>()));
  EXPECT_TRUE(std::isnan(kiln::tensor({std::nanf(""), 1.0f}).norm().item<float>()));
  EXPECT_TRUE(std::isnan(kiln::tensor({std::nanf(""), 1.0f}).norm(3).item<float>()));
  EXPECT_TRUE(std::isnan(kiln::tensor({std::nan(""), 1.0}, kiln::kDouble).std().item<double>()));
}

// copy_ shares the source's value: a write through the copy's pointer is the copy's alone.
TEST(OpsLibtorchParity, WritesThroughDataPtrStayInTheirTensor) {
  const Tensor source = kiln::tensor({1.0f, 2.0f, 3.0f});
  Tensor copy = kiln::empty({3});
  copy.copy_(source);
  copy.data_ptr<float>()[0] = 100;
  EXPECT_EQ(source.to_vector<float>(), std::vector<float>({1, 2, 3}));
  EXPECT_EQ(copy.to_vector<float>(), std::vector<float>({100, 2, 3}));
  const Tensor doubled = source * 2;
  Tensor copy2 = kiln::empty({3});
  copy2.copy_(doubled);
  copy2.data_ptr<float>()[1] = -1;
  EXPECT_EQ(doubled.to_vector<float>(), std::vector<float>({2, 4, 6}));
  EXPECT_EQ((copy2 + 0).to_vector<float>(), std::vector<float>({2, -1, 6}));
}

namespace {
// Runs `check` lazily on compiled kernels, eagerly (KILN_LAZY=0) and on the interpreter.
template <typename Check>
void in_every_mode(Check&& check) {
  struct Restore {
    bool lazy = kiln::is_lazy();
    std::string backend = kiln::config().backend;
    ~Restore() {
      kiln::sync();
      kiln::set_lazy(lazy);
      kiln::config().backend = backend;
    }
  } restore;
  const std::pair<bool, const char*> modes[] = {{true, "halide"}, {false, "halide"}, {true, "interp"}};
  for (const auto& [lazy, backend] : modes) {
    SCOPED_TRACE(std::string(lazy ? "lazy " : "eager ") + backend);
    kiln::sync();
    kiln::set_lazy(lazy);
    kiln::config().backend = backend;
    check();
  }
}
}  // namespace

// Scalars were doubles from the Scalar to the kernel's argument: an int64 above 2^53 lost its low
// bits. libtorch 1.13 gives the values below for the same program.
TEST(OpsLibtorchParity, Int64ScalarsStayExact) {
  const int64_t big = (int64_t(1) << 53) + 1;  // no double holds it
  in_every_mode([&] {
    EXPECT_EQ(kiln::full({1}, big, kiln::kLong).item<int64_t>(), big);
    EXPECT_EQ(kiln::full({2}, big).dtype(), kiln::kLong);
    EXPECT_EQ(kiln::full({2}, big).to_vector<int64_t>(), std::vector<int64_t>({big, big}));
    EXPECT_EQ(kiln::full({1}, big, kiln::kLong).item().toLong(), big);
    const Tensor zeros = kiln::zeros({2}, kiln::kLong), ones = kiln::ones({1}, kiln::kLong);
    EXPECT_EQ((zeros + big).to_vector<int64_t>(), std::vector<int64_t>({big, big}));
    EXPECT_EQ(zeros.add(3, big)[0].item<int64_t>(), 27021597764222979);
    EXPECT_EQ((ones * big).item<int64_t>(), big);
    EXPECT_EQ((ones - big).item<int64_t>(), -9007199254740992);
    EXPECT_EQ((big - ones).item<int64_t>(), 9007199254740992);
    const Tensor x = kiln::full({1}, big, kiln::kLong);
    EXPECT_FALSE((x == big - 1).item<bool>());
    EXPECT_TRUE((x > big - 1).item<bool>());
    EXPECT_EQ(kiln::full({1}, big + 4, kiln::kLong).clamp(std::nullopt, big).item<int64_t>(), big);
    const Tensor all = kiln::ones({2}, kiln::kBool);
    EXPECT_EQ(zeros.masked_fill(all, big).to_vector<int64_t>(), std::vector<int64_t>({big, big}));
    EXPECT_EQ(kiln::where(all, big, zeros).to_vector<int64_t>(), std::vector<int64_t>({big, big}));
    Tensor filled = kiln::zeros({2}, kiln::kLong);
    filled.fill_(big);
    EXPECT_EQ(filled.to_vector<int64_t>(), std::vector<int64_t>({big, big}));
    // One kernel over data in memory, with two int64 constants.
    const Tensor data = kiln::tensor({int64_t(1), int64_t(-2)});
    EXPECT_EQ((data * 3 + big).to_vector<int64_t>(), std::vector<int64_t>({big + 3, big - 6}));
    // arange counts in int64, from its bounds and step truncated to integers.
    const Tensor near = kiln::arange(big - 2, big + 3);
    EXPECT_EQ(near.dtype(), kiln::kLong);
    EXPECT_EQ(near.to_vector<int64_t>(), std::vector<int64_t>({big - 2, big - 1, big, big + 1, big + 2}));
    const int64_t s62 = int64_t(1) << 62, step = 1000000000000;
    EXPECT_EQ(kiln::arange(s62, s62 + 3 * step, step).to_vector<int64_t>(),
              std::vector<int64_t>({s62, s62 + step, s62 + 2 * step}));
    EXPECT_EQ(kiln::arange(0, 4.5, 1, kiln::kLong).to_vector<int64_t>(), std::vector<int64_t>({0, 1, 2, 3}));
    EXPECT_EQ(kiln::arange(0, 3, 1.5, kiln::kLong).to_vector<int64_t>(), std::vector<int64_t>({0, 1, 2}));
    EXPECT_EQ(kiln::arange(-0.5, 3, 1, kiln::kLong).to_vector<int64_t>(), std::vector<int64_t>({0, 1, 2}));
    EXPECT_EQ(kiln::arange(10, 0, -3, kiln::kLong).to_vector<int64_t>(), std::vector<int64_t>({10, 7, 4, 1}));
    // An integer becomes a float32 in one rounding, as libtorch converts it: through a double,
    // 2^62 + 2^38 + 1 rounded to 2^62 + 2^38 first and then, a tie, to 2^62.
    const int64_t odd = (int64_t(1) << 62) + (int64_t(1) << 38) + 1;
    EXPECT_EQ((kiln::zeros({1}) + odd).item<float>(), float(odd));
    EXPECT_EQ(kiln::full({1}, odd, kiln::kFloat).item<float>(), float(odd));
  });
}

// libtorch's clone keeps a dense, non-overlapping layout (MemoryFormat::Preserve), and gives any
// other layout dense strides in the same order of dims; kiln's clone was always contiguous.
TEST(OpsLibtorchParity, CloneKeepsTheLayout) {
  in_every_mode([&] {
    const Tensor m = kiln::arange(6, kiln::kFloat).reshape({2, 3});
    const Tensor c = m.t().clone();
    EXPECT_EQ(c.strides().vec(), std::vector<int64_t>({1, 3}));
    EXPECT_FALSE(c.is_contiguous());
    EXPECT_EQ(c.to_vector<float>(), std::vector<float>({0, 3, 1, 4, 2, 5}));
    EXPECT_EQ(m.t().clone(kiln::MemoryFormat::Preserve).strides().vec(), std::vector<int64_t>({1, 3}));
    EXPECT_EQ(m.t().clone(kiln::MemoryFormat::Contiguous).strides().vec(), std::vector<int64_t>({2, 1}));
    EXPECT_EQ(m.t().contiguous().strides().vec(), std::vector<int64_t>({2, 1}));
    EXPECT_EQ(kiln::rand({2, 3, 4}).permute({2, 0, 1}).clone().strides().vec(), std::vector<int64_t>({1, 12, 4}));
    EXPECT_EQ(kiln::rand({1, 3}).t().clone().strides().vec(), std::vector<int64_t>({1, 3}));
    EXPECT_EQ(kiln::rand({2, 3, 4, 5}).clone(kiln::MemoryFormat::ChannelsLast).strides().vec(),
              std::vector<int64_t>({60, 1, 15, 3}));
    // Not dense: the order of the dims is kept, the gaps are not.
    EXPECT_EQ(kiln::rand({4, 6}).slice(1, 0, 6, 2).clone().strides().vec(), std::vector<int64_t>({3, 1}));
    EXPECT_EQ(kiln::rand({3, 1}).expand({3, 4}).clone().strides().vec(), std::vector<int64_t>({4, 1}));
    const Tensor narrow = kiln::arange(24, kiln::kFloat).reshape({4, 6}).t().narrow(0, 1, 3);
    EXPECT_EQ(narrow.clone().strides().vec(), std::vector<int64_t>({1, 3}));
    EXPECT_EQ(narrow.clone().to_vector<float>(), narrow.to_vector<float>());
    // The clone is a tensor of its own: written in place, reshaped, differentiated.
    Tensor w = c.clone();
    w.add_(1);
    EXPECT_EQ(w.to_vector<float>(), std::vector<float>({1, 4, 2, 5, 3, 6}));
    EXPECT_EQ(c.to_vector<float>(), std::vector<float>({0, 3, 1, 4, 2, 5}));
    EXPECT_EQ(c.reshape({6}).to_vector<float>(), std::vector<float>({0, 3, 1, 4, 2, 5}));
    const Tensor leaf = kiln::rand({2, 3}, kiln::requires_grad());
    const Tensor lc = leaf.t().clone();
    EXPECT_EQ(lc.grad_fn()->name(), "CloneBackward0");
    (lc * kiln::arange(6, kiln::kFloat).reshape({3, 2})).sum().backward();
    EXPECT_EQ(leaf.grad().to_vector<float>(), std::vector<float>({0, 2, 4, 1, 3, 5}));
  });
}

// from_blob copied the caller's buffer; libtorch's tensor is the buffer. kiln reads the memory
// when a kernel runs, and an in-place write reaches it at the next flush (kiln::sync(), or reading
// a value that needs computing).
TEST(OpsLibtorchParity, FromBlobAliasesTheCallersMemory) {
  in_every_mode([&] {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    auto memory = [&] { return std::vector<float>(buf, buf + 6); };
    Tensor t = kiln::from_blob(buf, {2, 3});
    EXPECT_EQ(t.data_ptr(), static_cast<void*>(buf));
    buf[0] = 10;
    EXPECT_EQ(t[0][0].item<float>(), 10.0f);
    EXPECT_EQ((t * 2).to_vector<float>(), std::vector<float>({20, 4, 6, 8, 10, 12}));
    t.add_(1);
    kiln::sync();
    EXPECT_EQ(memory(), std::vector<float>({11, 3, 4, 5, 6, 7}));
    t[1].mul_(2);
    EXPECT_EQ(t.sum().item<float>(), 54.0f);  // reading a pending value flushes: the memory is written
    EXPECT_EQ(memory(), std::vector<float>({11, 3, 4, 10, 12, 14}));
    buf[5] = 0;
    EXPECT_EQ(t.sum().item<float>(), 40.0f);
    // A strided tensor over the memory: only its elements are written.
    Tensor columns = kiln::from_blob(buf, {3, 2}, {1, 3});
    EXPECT_EQ(columns.to_vector<float>(), std::vector<float>({11, 10, 3, 12, 4, 0}));
    columns.select(1, 0).zero_();
    kiln::sync();
    EXPECT_EQ(memory(), std::vector<float>({0, 0, 0, 10, 12, 0}));
    // A temporary's in-place write reaches the memory too.
    kiln::from_blob(buf, {6}).fill_(1);
    kiln::sync();
    EXPECT_EQ(memory(), std::vector<float>(6, 1.0f));
    // Copies are not the memory: copy_ into another tensor, clone, and what was computed from a
    // tensor over the memory after that tensor went (read when it went, or at once when eager).
    Tensor copy = kiln::zeros({6});
    copy.copy_(kiln::from_blob(buf, {6}));
    const Tensor cloned = kiln::from_blob(buf, {6}).clone();
    const Tensor doubled = kiln::from_blob(buf, {6}) * 2;
    std::fill(buf, buf + 6, 100.0f);
    EXPECT_EQ(copy.to_vector<float>(), std::vector<float>(6, 1.0f));
    EXPECT_EQ(cloned.to_vector<float>(), std::vector<float>(6, 1.0f));
    EXPECT_EQ(doubled.to_vector<float>(), std::vector<float>(6, 2.0f));
  });
}

// As libtorch's, from_blob's deleter is called when the last tensor over the memory goes; kiln
// first copies what lazy ops recorded over it still have to read.
TEST(OpsLibtorchParity, FromBlobCallsItsDeleterWhenTheLastTensorGoes) {
  in_every_mode([&] {
    auto* values = new std::vector<float>{1, 2, 3, 4};
    int deleted = 0;
    Tensor t = kiln::from_blob(values->data(), {4}, [&](void* p) {
      EXPECT_EQ(p, values->data());
      ++deleted;
      delete values;
    });
    Tensor view = t.view({2, 2});
    const Tensor tripled = t * 3;
    t = Tensor();
    EXPECT_EQ(deleted, 0);
    view = Tensor();
    EXPECT_EQ(deleted, 1);
    EXPECT_EQ(tripled.to_vector<float>(), std::vector<float>({3, 6, 9, 12}));
    double weights[4] = {1, 2, 3, 4};
    int released = 0;
    {
      Tensor w = kiln::from_blob(
          weights, {2, 2}, {1, 2}, [&](void*) { ++released; }, kiln::TensorOptions(kiln::kDouble).requires_grad(true));
      EXPECT_TRUE(w.requires_grad());
      EXPECT_TRUE(w.is_leaf());
      (w * w).sum().backward();
      EXPECT_EQ(w.grad().to_vector<double>(), std::vector<double>({2, 6, 4, 8}));
    }
    EXPECT_EQ(released, 1);
  });
}
