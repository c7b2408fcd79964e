// Tensor::accessor and packed_accessor32/64 as libtorch 1.13's (the values, version counter and
// messages below are what a libtorch program printed).
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include "expect_error.h"

namespace {

TEST(Accessor, ReadsAndWritesTheTensorsMemory) {
  torch::Tensor t = torch::arange(6, torch::kFloat).reshape({2, 3});
  auto a = t.accessor<float, 2>();
  EXPECT_EQ(a[1][1], 4.0f);
  a[1][2] = 50;
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 50}));
  EXPECT_EQ(t._version(), 0);  // as libtorch: not an in-place op
  // Later ops read the writes, and pending work ran before the accessor was made.
  torch::Tensor u = t * 2;
  auto b = u.accessor<float, 2>();
  b[0][0] = -1;
  EXPECT_EQ((u + 1).to_vector<float>(), (std::vector<float>{0, 3, 5, 7, 9, 101}));
  // A transposed view walks its strides.
  torch::Tensor tt = t.t();
  auto c = tt.accessor<float, 2>();
  EXPECT_EQ(c[2][1], 50.0f);
  EXPECT_EQ(c.size(0), 3);
  EXPECT_EQ(c.stride(0), 1);
  auto p = t.packed_accessor32<float, 2>();
  EXPECT_EQ(p[1][0], 3.0f);
  EXPECT_EQ(p.size(1), 3);
  torch::Tensor longs = torch::tensor({1, 2, 3}, torch::kLong);  // an accessor does not keep its tensor alive
  auto q = longs.packed_accessor64<int64_t, 1>();
  q[2] = 7;
  EXPECT_EQ(q[2], 7);
  torch::Tensor ints = torch::zeros({2, 2, 2}, torch::kInt);
  auto d = ints.accessor<int, 3>();
  d[1][0][1] = 9;
  EXPECT_EQ(ints.sum().item<int64_t>(), 9);
  EXPECT_EQ(ints[1][0][1].item<int>(), 9);
}

TEST(Accessor, DimensionAndDtypeAreCheckedAsLibtorch) {
  torch::Tensor t = torch::arange(6, torch::kFloat).reshape({2, 3});
  EXPECT_THROW_WITH((t.accessor<float, 3>()), "TensorAccessor expected 3 dims but tensor has 2");
  EXPECT_THROW_WITH((t.accessor<double, 2>()), "expected scalar type float64 but found float32");
  EXPECT_THROW_WITH((t.packed_accessor32<float, 1>()), "TensorAccessor expected 1 dims but tensor has 2");
}

}  // namespace
