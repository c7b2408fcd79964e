#include <gtest/gtest.h>
#include <kiln/kiln.h>

TEST(Smoke, AddAndBackward) {
  auto x = kiln::tensor({1.0, 2.0, 3.0}, kiln::requires_grad());
  auto y = (x * x).sum();
  EXPECT_FLOAT_EQ(y.item<float>(), 14.0f);
  y.backward();
  auto g = x.grad().to_vector<float>();
  EXPECT_EQ(g, (std::vector<float>{2, 4, 6}));
}
