// How the host reaches values on a CUDA device, on the fake device (tests/cuda_fake_driver.h),
// whose memory faults when the host reads it outside a driver call, as a GPU's would: data_ptr
// gives the device pointer (as libtorch's), and item, to_vector, printing, `.cpu()` and
// serialization copy through the driver once the device's stream has run.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cstdlib>
#include <sstream>

#include "cuda_fake_driver.h"
#include "serialize_test_util.h"

namespace {

struct FakeCudaHostAccess : ::testing::Test {
  FakeCudaHostAccess() { kiln_test::use_fake_cuda(true); }
  ~FakeCudaHostAccess() override { kiln_test::use_fake_cuda(false); }
  void SetUp() override {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  }
  const torch::Device cuda{"cuda:0"};
};

std::vector<float> values(const torch::Tensor& t) { return t.cpu().contiguous().to_vector<float>(); }

TEST_F(FakeCudaHostAccess, DataPtrIsDeviceMemoryThatLaterOpsRead) {
  auto x = torch::arange(4, torch::kFloat).to(cuda) * 2;  // pending until data_ptr
  float* p = x.data_ptr<float>();
  EXPECT_TRUE(kiln_test::fake_cuda_device_memory(p));
  EXPECT_TRUE(kiln_test::fake_cuda_device_memory(x.const_data_ptr()));
  EXPECT_EQ(x.narrow(0, 1, 2).data_ptr<float>(), p + 1);
  const std::vector<float> written{5, 6, 7, 8};
  kiln_test::fake_cuda_copy_to_device(p, written.data(), sizeof(float) * 4);  // as a user's kernel
  EXPECT_EQ(values(x + 1), (std::vector<float>{6, 7, 8, 9}));
  EXPECT_TRUE(x.is_cuda());
}

// A storage that shares its value (copy_ shares the source's) gets a device copy of its own to
// write: the source keeps its values.
TEST_F(FakeCudaHostAccess, DataPtrOfASharedValueIsACopyOnTheDevice) {
  auto source = torch::arange(3, torch::kFloat).to(cuda) * 3;
  auto target = torch::zeros({3}, cuda);
  target.copy_(source);
  float* p = target.data_ptr<float>();
  EXPECT_TRUE(kiln_test::fake_cuda_device_memory(p));
  EXPECT_NE(static_cast<const void*>(p), source.const_data_ptr());
  const std::vector<float> written{-1, -2, -3};
  kiln_test::fake_cuda_copy_to_device(p, written.data(), sizeof(float) * 3);
  EXPECT_EQ(values(target), written);
  EXPECT_EQ(values(source), (std::vector<float>{0, 3, 6}));
}

TEST_F(FakeCudaHostAccess, ValuesAreReadThroughTheDriver) {
  auto x = torch::tensor({1.5f, -2.f, 4.f}).to(cuda);
  auto y = x * x;
  EXPECT_FLOAT_EQ(y.sum().item<float>(), 22.25f);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2.25f, 4.f, 16.f}));
  EXPECT_EQ(y.to(torch::kDouble).to_vector<double>(), (std::vector<double>{2.25, 4, 16}));
  EXPECT_EQ(y.t().contiguous().to_vector<float>().size(), 3u);
  std::ostringstream printed;
  printed << y;
  EXPECT_NE(printed.str().find("2.25"), std::string::npos) << printed.str();
  EXPECT_NE(printed.str().find("[ CUDAFloatType{3} ]"), std::string::npos) << printed.str();
  EXPECT_TRUE(torch::equal(y.cpu(), torch::tensor({2.25f, 4.f, 16.f})));
  EXPECT_TRUE(y.cpu().is_cpu());
  // Views read only the elements they reach, from anywhere in the storage.
  auto big = torch::arange(1000, torch::kFloat).to(cuda) + 0;
  EXPECT_EQ(big[999].item<float>(), 999.f);
  EXPECT_EQ(big.reshape({10, 100}).t().narrow(0, 98, 2).to_vector<float>(),
            (std::vector<float>{98, 198, 298, 398, 498, 598, 698, 798, 898, 998,
                                99, 199, 299, 399, 499, 599, 699, 799, 899, 999}));
  EXPECT_EQ(big.narrow(0, 10, 3).to_vector<float>(), (std::vector<float>{10, 11, 12}));
}

TEST_F(FakeCudaHostAccess, ModulesOnTheDeviceSaveAndLoadThroughTheHost) {
  serialize_test::TempDir dir;
  const std::string path = dir.file("net.safetensors");
  torch::manual_seed(1);
  torch::nn::Linear saved(3, 2);
  saved->to(cuda);
  torch::save(saved, path);

  torch::manual_seed(2);
  torch::nn::Linear on_cpu(3, 2), on_cuda(3, 2);
  on_cuda->to(cuda);
  torch::load(on_cpu, path);
  torch::load(on_cuda, path);
  EXPECT_TRUE(on_cpu->weight.is_cpu());
  EXPECT_TRUE(on_cuda->weight.is_cuda());
  EXPECT_TRUE(on_cuda->bias.is_cuda());
  EXPECT_EQ(values(on_cpu->weight), values(saved->weight));
  EXPECT_EQ(values(on_cuda->weight), values(saved->weight));
  EXPECT_EQ(values(on_cuda->bias), values(saved->bias));

  // A tensor, and a tensor loaded over one on the device with another shape: on the device.
  const std::string tensor_path = dir.file("tensor.safetensors");
  auto t = torch::arange(6, torch::kFloat).reshape({2, 3}).to(cuda);
  torch::save(t, tensor_path);
  torch::Tensor loaded = torch::zeros({1}, cuda);
  torch::load(loaded, tensor_path);
  EXPECT_TRUE(loaded.is_cuda());
  EXPECT_EQ(loaded.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(loaded), values(t));
}

// An optimizer's state for parameters on the device is saved through the host and loaded onto
// the parameters' device: the loaded optimizer steps there.
TEST_F(FakeCudaHostAccess, OptimizerStateOnTheDeviceSavesAndLoads) {
  serialize_test::TempDir dir;
  const std::string path = dir.file("adam.safetensors");
  torch::manual_seed(3);
  torch::nn::Linear net(3, 2);
  net->to(cuda);
  const auto x = torch::randn({4, 3}).to(cuda);
  auto step = [&](torch::optim::Optimizer& optimizer) {
    optimizer.zero_grad();
    net->forward(x).pow(2).sum().backward();
    optimizer.step();
  };
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-2));
  step(adam);
  torch::save(adam, path);
  torch::optim::Adam loaded(net->parameters(), torch::optim::AdamOptions(1e-2));
  torch::load(loaded, path);
  const auto before = values(net->weight);
  step(loaded);
  EXPECT_TRUE(net->weight.is_cuda());
  EXPECT_NE(values(net->weight), before);
}

}  // namespace
