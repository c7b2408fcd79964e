// namespace torch is a namespace of its own, as libtorch's: programs reopen it and torch::nn, with
// or without `using namespace torch;`, and find the c10, at and caffe2 names they use.
#include <gtest/gtest.h>
#include <kiln/torch.h>

// A program may open namespace torch and torch::nn, as libtorch allows, and still find kiln's
// names there, with or without `using namespace torch;`.
namespace torch {
inline Tensor twice(const Tensor& t) { return t * 2; }
}  // namespace torch
namespace torch::nn {
struct DoublerImpl : Module {
  Tensor forward(const Tensor& x) { return twice(x); }
};
TORCH_MODULE(Doubler);
}  // namespace torch::nn

namespace {
int64_t linear_outputs_through_using_directive() {
  using namespace torch;
  nn::Linear linear(2, 3);
  Tensor y = linear->forward(ones({1, 2}));
  return y.size(1);
}
}  // namespace

TEST(TorchNamespace, ProgramsReopenItAndFindLibtorchsNames) {
  EXPECT_EQ(linear_outputs_through_using_directive(), 3);
  torch::nn::Doubler doubler;
  EXPECT_EQ(doubler->forward(torch::ones({2})).sum().item<double>(), 4);
  at::Tensor t = at::ones({2}, at::kFloat);
  c10::ScalarType st = at::kFloat;
  c10::IntArrayRef s = t.sizes();
  c10::optional<int64_t> none = c10::nullopt;
  c10::Device device(c10::DeviceType::CPU);
  caffe2::TypeMeta meta = caffe2::TypeMeta::Make<float>();
  EXPECT_EQ(st, t.scalar_type());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_FALSE(none.has_value());
  EXPECT_TRUE(device.is_cpu());
  EXPECT_EQ(meta, torch::kFloat);
  EXPECT_EQ(meta.itemsize(), 4u);
  int64_t total = 0;
  for (int64_t i : c10::irange(4)) total += i;
  EXPECT_EQ(total, 6);
  EXPECT_EQ(at::indexing::Slice(1).start(), 1);
}
