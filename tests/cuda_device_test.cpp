// The device half of the CUDA backend, on a machine without a GPU: the driver opened with dlopen
// (and why it is not available), the caching allocators' logic over a fake backing memory, and
// the frontend's devices.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda_fake_driver.h"
#include "expect_error.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"

namespace {

using kiln::cuda::CachingAllocator;

// Host memory with a capacity, counting what it hands out.
class FakeMemory : public kiln::cuda::RawMemory {
 public:
  explicit FakeMemory(size_t capacity) : capacity_(capacity) {}
  ~FakeMemory() override { EXPECT_EQ(*live_, 0u) << "segments not released"; }
  void* allocate(size_t bytes) override {
    if (*used_ + bytes > capacity_) return nullptr;
    *used_ += bytes;
    ++*live_;
    return std::malloc(bytes);
  }
  void release(void* memory, size_t bytes) override {
    *used_ -= bytes;
    --*live_;
    std::free(memory);
  }
  std::string capacity() const override { return "the fake has " + std::to_string(capacity_) + " bytes"; }
  // Shared with the test, which outlives no allocator's use of them.
  std::shared_ptr<size_t> used_ = std::make_shared<size_t>(0), live_ = std::make_shared<size_t>(0);

 private:
  size_t capacity_;
};

struct Fake {
  explicit Fake(size_t capacity = size_t(1) << 30) {
    auto memory = std::make_unique<FakeMemory>(capacity);
    used = memory->used_;
    allocator = std::make_unique<CachingAllocator>(std::move(memory), "fake:0");
  }
  std::shared_ptr<size_t> used;
  std::unique_ptr<CachingAllocator> allocator;
};

constexpr size_t kMiB = 1 << 20;

bool driver_library_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}

}  // namespace

TEST(CudaDevice, DriverIsNotAvailableWithoutLibcudaAndSaysWhy) {
  if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  EXPECT_FALSE(kiln::cuda_driver::available());
  EXPECT_EQ(kiln::cuda_driver::unavailable_reason(), "libcuda.so.1 not found: no NVIDIA driver on this machine");
  EXPECT_EQ(kiln::cuda_driver::device_count(), 0);
  EXPECT_THROW_WITH(kiln::cuda_driver::api(), "CUDA is not available: libcuda.so.1 not found");
  EXPECT_THROW_WITH(kiln::cuda_driver::device_properties(0), "CUDA device 0 does not exist (0 device(s): libcuda.so.1");
  EXPECT_THROW_WITH(kiln::cuda_driver::set_device(0), "no NVIDIA driver");
  EXPECT_THROW_WITH(kiln::cuda::device_allocator(0), "CUDA is not available: libcuda.so.1 not found");
  EXPECT_THROW_WITH(kiln::cuda::pinned_allocator(), "CUDA is not available");
  // The figures of a device nothing was allocated on are 0, as torch.cuda's.
  EXPECT_EQ(kiln::cuda::memory_allocated(), 0u);
  EXPECT_EQ(kiln::cuda::memory_reserved(), 0u);
  EXPECT_EQ(kiln::cuda::max_memory_allocated(), 0u);
  kiln::cuda::reset_peak_memory_stats();
  kiln::cuda::empty_cache();
}

TEST(CudaDevice, DriverErrorsNameTheCall) {
  EXPECT_NO_THROW(kiln::cuda_driver::check(kiln::cuda_driver::CUDA_SUCCESS, "cuInit"));
  EXPECT_THROW_WITH(kiln::cuda_driver::check(kiln::cuda_driver::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"),
                    "cuMemAlloc: ");
  if (!kiln::cuda_driver::available()) {  // no driver to ask for the message: the code is named
    EXPECT_EQ(kiln::cuda_driver::error_text("cuMemAlloc", 2), "cuMemAlloc: unknown error (CUresult 2)");
  } else {
    EXPECT_EQ(kiln::cuda_driver::error_text("cuMemAlloc", 2), "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
  }
}

TEST(CudaDevice, AllocatorRoundsToBlocksAndPicksThePool) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  Fake f;
  void* a = f.allocator->allocate(100);
  // A small request takes a 2 MiB segment of the small pool.
  EXPECT_EQ(f.allocator->stats().reserved, 2 * kMiB);
  EXPECT_EQ(f.allocator->stats().allocated, 512u);
  void* b = f.allocator->allocate(1000);  // carved from the same segment, after the first block
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 512);
  EXPECT_EQ(f.allocator->stats().segments, 1u);
  // A large one under 10 MiB takes a 20 MiB segment, and the rest stays for the next.
  void* c = f.allocator->allocate(3 * kMiB);
  EXPECT_EQ(f.allocator->stats().reserved, 22 * kMiB);
  void* d = f.allocator->allocate(4 * kMiB);
  EXPECT_EQ(static_cast<char*>(d), static_cast<char*>(c) + 3 * kMiB);
  EXPECT_EQ(f.allocator->stats().segments, 2u);
  // From 10 MiB on, a segment of the request's size rounded to 2 MiB (13 MiB are left above d).
  void* e = f.allocator->allocate(13 * kMiB + 1);
  EXPECT_EQ(f.allocator->stats().reserved, 36 * kMiB);
  // The last 1 MiB - 512 of e's segment is too little to split off a large block: e has it all.
  EXPECT_EQ(f.allocator->stats().allocated, 512u + 1024u + 7 * kMiB + 14 * kMiB);
  for (void* p : {a, b, c, d, e}) f.allocator->free(p);
  EXPECT_EQ(f.allocator->stats().allocated, 0u);
  EXPECT_EQ(f.allocator->stats().reserved, 36 * kMiB);  // cached
}

TEST(CudaDevice, AllocatorReusesFreedBlocksWithoutTheDriver) {
  Fake f;
  std::vector<void*> first;
  for (size_t bytes : {4096u, 300000u, 5u << 20, 12u << 20}) first.push_back(f.allocator->allocate(bytes));
  const size_t raw = f.allocator->stats().raw_allocations;
  for (void* p : first) f.allocator->free(p);
  // A training loop's next step asks for the same sizes: the same blocks, no new segment.
  for (int step = 0; step < 5; ++step) {
    std::vector<void*> again;
    for (size_t bytes : {4096u, 300000u, 5u << 20, 12u << 20}) again.push_back(f.allocator->allocate(bytes));
    EXPECT_EQ(again, first);
    for (void* p : again) f.allocator->free(p);
  }
  EXPECT_EQ(f.allocator->stats().raw_allocations, raw);
  // Freed neighbours merge back: the whole small segment serves a 1 MiB request again.
  void* whole = f.allocator->allocate(kMiB);
  EXPECT_EQ(whole, first[0]);
  f.allocator->free(whole);
}

TEST(CudaDevice, AllocatorCountsPeaksAndEmptiesItsCache) {
  Fake f;
  void* a = f.allocator->allocate(3 * kMiB);
  void* b = f.allocator->allocate(5 * kMiB);
  f.allocator->free(a);
  EXPECT_EQ(f.allocator->stats().allocated, 5 * kMiB);
  EXPECT_EQ(f.allocator->stats().peak_allocated, 8 * kMiB);
  f.allocator->reset_peak_stats();
  EXPECT_EQ(f.allocator->stats().peak_allocated, 5 * kMiB);
  f.allocator->empty_cache();  // b's segment is in use: it stays
  EXPECT_EQ(f.allocator->stats().reserved, 20 * kMiB);
  f.allocator->free(b);
  f.allocator->empty_cache();
  EXPECT_EQ(f.allocator->stats().reserved, 0u);
  EXPECT_EQ(*f.used, 0u);
  EXPECT_EQ(f.allocator->stats().peak_reserved, 20 * kMiB);
  EXPECT_THROW_WITH(f.allocator->free(&f), "fake:0: free of a pointer this allocator did not hand out");
}

TEST(CudaDevice, AllocatorEmptiesItsCacheAndRetriesWhenOutOfMemory) {
  Fake f(40 * kMiB);
  void* a = f.allocator->allocate(12 * kMiB);
  void* b = f.allocator->allocate(14 * kMiB);
  f.allocator->free(a);
  f.allocator->free(b);
  // 26 MiB cached; 30 MiB more does not fit beside them, but does once they are given back.
  void* c = f.allocator->allocate(30 * kMiB);
  EXPECT_EQ(f.allocator->stats().cache_flushes, 1u);
  EXPECT_EQ(f.allocator->stats().reserved, 30 * kMiB);
  f.allocator->free(c);
}

TEST(CudaDevice, OutOfMemoryNamesTheSizesAndLeavesTheAllocatorUsable) {
  Fake f(40 * kMiB);
  void* a = f.allocator->allocate(24 * kMiB);
  try {
    f.allocator->allocate(20 * kMiB);
    ADD_FAILURE() << "expected out of memory";
  } catch (const kiln::Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("fake:0: out of memory. Tried to allocate 20.00 MiB (20971520 bytes"), std::string::npos)
        << text;
    EXPECT_NE(text.find("24.00 MiB allocated by kiln and 24.00 MiB reserved by kiln"), std::string::npos) << text;
    EXPECT_NE(text.find("the fake has 41943040 bytes"), std::string::npos) << text;
  }
  EXPECT_EQ(f.allocator->stats().allocated, 24 * kMiB);
  void* b = f.allocator->allocate(10 * kMiB);  // what fits still comes
  f.allocator->free(a);
  f.allocator->free(b);
  void* c = f.allocator->allocate(20 * kMiB);  // and the failed size once memory is free
  f.allocator->free(c);
}

TEST(CudaDevice, StagingBlocksReturnOnlyOnceTheirCopyIsDone) {
  Fake f;
  void* a = f.allocator->allocate(4096);
  bool copied = false;
  f.allocator->free_when(a, [&] { return copied; });
  void* b = f.allocator->allocate(4096);
  EXPECT_NE(a, b);  // a's copy may still read it
  EXPECT_EQ(f.allocator->stats().allocated, 8192u);
  copied = true;
  void* c = f.allocator->allocate(4096);
  EXPECT_EQ(c, a);
  f.allocator->free(b);
  f.allocator->free(c);
}

// --- the frontend's devices ---

TEST(CudaDevice, DevicesParseAsLibtorchsDo) {
  const torch::Device cuda0("cuda:0");
  EXPECT_TRUE(cuda0.is_cuda());
  EXPECT_EQ(cuda0.index(), 0);
  EXPECT_EQ(cuda0.str(), "cuda:0");
  EXPECT_EQ(torch::Device("cuda").index(), -1);
  EXPECT_FALSE(torch::Device("cuda").has_index());
  EXPECT_EQ(torch::Device("cuda:12").index(), 12);
  EXPECT_EQ(torch::Device(torch::kCUDA, 1), torch::Device("cuda:1"));
  EXPECT_NE(torch::Device("cuda:0"), torch::Device("cuda"));
  EXPECT_TRUE(torch::Device("cpu").is_cpu());
  std::ostringstream os;
  os << torch::Device(torch::kCUDA, 3);
  EXPECT_EQ(os.str(), "cuda:3");
  EXPECT_THROW_WITH(torch::Device("gpu:0"), "expected one of cpu, cuda device type at start of device string: gpu:0");
  EXPECT_THROW_WITH(torch::Device("cuda:x"), "invalid device string: 'cuda:x'");
  EXPECT_THROW_WITH(torch::Device("cuda:"), "invalid device string: 'cuda:'");
  EXPECT_THROW_WITH(torch::Device("cuda:-1"), "invalid device string: 'cuda:-1'");
  EXPECT_THROW_WITH(torch::Device(torch::kCUDA, -2), "device index must be -1 or non-negative, got -2");
}

TEST(CudaDevice, EveryCudaRequestSaysWhyCudaIsNotAvailable) {
  if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  EXPECT_FALSE(torch::cuda::is_available());
  EXPECT_EQ(torch::cuda::device_count(), 0);
  EXPECT_NO_THROW(torch::cuda::synchronize());  // nothing to wait for
  const std::string why =
      "a CUDA tensor was asked for, but CUDA is not available: libcuda.so.1 not found: no NVIDIA "
      "driver on this machine (torch::cuda::is_available() is false)";
  auto x = torch::ones({2, 3});
  EXPECT_THROW_WITH(torch::TensorOptions(torch::kCUDA), "TensorOptions: " + why);
  EXPECT_THROW_WITH(torch::TensorOptions().device(torch::Device("cuda:0")), "TensorOptions::device: " + why);
  EXPECT_THROW_WITH(torch::zeros({2}, torch::kCUDA), why);
  EXPECT_THROW_WITH(torch::randn({2}, torch::Device("cuda:1")), why);
  EXPECT_THROW_WITH(x.cuda(), "to: " + why);
  EXPECT_THROW_WITH(x.to(torch::kCUDA), why);
  EXPECT_THROW_WITH(x.to(torch::Device("cuda:0"), torch::kDouble), "to: " + why);
  torch::nn::Linear net(3, 2);
  EXPECT_THROW_WITH(net->to(torch::Device(torch::kCUDA)), "Module::to: " + why);
  EXPECT_TRUE(net->weight.is_cpu());
  // The CPU is always there, and a tensor says where it is.
  EXPECT_TRUE(x.to(torch::kCPU).is_same(x));
  EXPECT_TRUE(x.cpu().is_same(x));
  EXPECT_EQ(x.device(), torch::Device(torch::kCPU));
  EXPECT_EQ(x.get_device(), -1);
  EXPECT_FALSE(x.is_cuda());
}

namespace {

// The test's CUDA device, host memory underneath, its kernels run by the CUDA backend through a
// fake driver (tests/cuda_fake_driver.h).
struct FakeCuda : ::testing::Test {
  FakeCuda() { kiln_test::use_fake_cuda(true); }
  ~FakeCuda() override { kiln_test::use_fake_cuda(false); }
  void SetUp() override {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  }
  const torch::Device cuda{"cuda:0"};
};

void expect_equal(const torch::Tensor& a, const torch::Tensor& b) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  EXPECT_EQ(a.cpu().contiguous().to_vector<float>(), b.cpu().contiguous().to_vector<float>());
}

// Within float rounding: the device sums and multiplies in another order than the CPU backend.
void expect_close(const torch::Tensor& a, const torch::Tensor& b) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  const std::vector<float> x = a.cpu().contiguous().to_vector<float>(), y = b.cpu().contiguous().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5 + 1e-5 * std::abs(y[i])) << "element " << i;
}

}  // namespace

TEST_F(FakeCuda, TensorsCarryTheirDevice) {
  EXPECT_TRUE(torch::cuda::is_available());
  EXPECT_EQ(torch::cuda::device_count(), 1);
  auto x = torch::arange(6, torch::kFloat).reshape({2, 3});
  auto y = x.to(cuda);
  EXPECT_TRUE(y.is_cuda());
  EXPECT_EQ(y.device(), cuda);
  EXPECT_EQ(y.get_device(), 0);
  EXPECT_TRUE(x.is_cpu());  // `to` copies
  EXPECT_TRUE(y.to(cuda).is_same(y));
  EXPECT_EQ(x.cuda().device(), cuda);
  EXPECT_EQ(x.to(torch::kCUDA).device(), cuda);  // the current device: cuda:0
  auto back = (y * 2 + 1).cpu();
  EXPECT_TRUE(back.is_cpu());
  expect_equal(back, x * 2 + 1);
  // Ops keep the device: views, reductions, matmul, casts, *_like, options().
  EXPECT_TRUE(y.t().is_cuda());
  EXPECT_TRUE(y.sum().is_cuda());
  EXPECT_TRUE(y.matmul(y.t()).is_cuda());
  EXPECT_TRUE(y.to(torch::kDouble).is_cuda());
  EXPECT_TRUE(torch::zeros_like(y).is_cuda());
  EXPECT_TRUE(torch::randn_like(y).is_cuda());
  EXPECT_EQ(y.options().device(), cuda);
  EXPECT_TRUE(x.to(y).is_cuda());
  EXPECT_FLOAT_EQ(y.sum().item<float>(), 15.f);
  // Creation on a device, and a seeded draw the same as on the CPU.
  EXPECT_TRUE(torch::zeros({2}, torch::TensorOptions().device(cuda)).is_cuda());
  EXPECT_TRUE(torch::ones({2}, cuda).is_cuda());
  torch::manual_seed(7);
  auto on_cpu = torch::randn({4});
  torch::manual_seed(7);
  auto on_cuda = torch::randn({4}, torch::TensorOptions().device(torch::kCUDA).requires_grad(true));
  EXPECT_TRUE(on_cuda.is_cuda());
  EXPECT_TRUE(on_cuda.is_leaf());
  expect_equal(on_cpu, on_cuda);
  EXPECT_THROW_WITH(torch::zeros({2}, torch::Device("cuda:1")),
                    "CUDA device 1 was asked for, but there is 1 CUDA device");
}

void ops_mixing_devices_name_the_op_and_both_devices(const torch::Device& cuda) {
  auto a = torch::ones({2, 3}).to(cuda), b = torch::rand({2, 3});
  EXPECT_THROW_WITH(a + b,
                    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                    "(when checking the inputs of add)");
  EXPECT_THROW_WITH(b * a, "found at least two devices, cpu and cuda:0! (when checking the inputs of mul)");
  EXPECT_THROW_WITH(a.matmul(b.t()), "found at least two devices, cuda:0 and cpu!");
  EXPECT_THROW_WITH(torch::cat({a, b}), "found at least two devices");
  EXPECT_THROW_WITH(torch::mse_loss(a, b), "found at least two devices");
  // copy_ is how values cross devices, in libtorch too: the destination stays where it is.
  auto c = torch::zeros({2, 3}, cuda);
  c.copy_(b);
  EXPECT_TRUE(c.is_cuda());
  expect_equal(c, b);
  c.mul_(2);
  EXPECT_THROW_WITH(c.add_(b), "found at least two devices");
  // As in libtorch, a number or a 0-dim CPU tensor goes with a tensor on any device.
  EXPECT_TRUE((a * 2).is_cuda());
  EXPECT_TRUE((a * torch::tensor(3.f)).is_cuda());
  EXPECT_TRUE((torch::tensor(3.f) - a).is_cuda());
  EXPECT_TRUE((a * torch::zeros({})).is_cuda());
  // A constant fill made without a device is a CPU tensor, as in libtorch.
  EXPECT_THROW_WITH(a + torch::ones({2, 3}),
                    "found at least two devices, cuda:0 and cpu! (when checking the inputs of add)");
  EXPECT_THROW_WITH(torch::zeros({3}) * a,
                    "found at least two devices, cpu and cuda:0! (when checking the inputs of mul)");
  EXPECT_THROW_WITH(torch::where(a > 0, a, torch::full({2, 3}, 7.f)), "found at least two devices, ");
  EXPECT_THROW_WITH(torch::cat({a, torch::zeros({1, 3})}), "found at least two devices");
  EXPECT_THROW_WITH(a.index_select(0, torch::zeros({2}, torch::kLong)), "found at least two devices");
  EXPECT_TRUE((a + torch::ones({2, 3}, cuda)).is_cuda());
}
TEST_F(FakeCuda, OpsMixingDevicesNameTheOpAndBothDevices) { ops_mixing_devices_name_the_op_and_both_devices(cuda); }

// Ops whose composites make fills of their own make them on their input's device: nothing of
// theirs is a CPU tensor beside a CUDA one, forward or backward.
void composites_make_their_fills_on_the_inputs_device(const torch::Device& cuda) {
  namespace F = torch::nn::functional;
  torch::manual_seed(2);
  const auto x = torch::randn({2, 4, 3, 3}), dx = x.to(cuda).requires_grad_(true);
  const auto longs = torch::randint(0, 5, {2, 3}, torch::kLong);
  expect_equal(torch::isnan(longs.to(cuda)).to(torch::kFloat), torch::isnan(longs).to(torch::kFloat));
  expect_equal(torch::isinf(longs.to(cuda)).to(torch::kFloat), torch::isinf(longs).to(torch::kFloat));
  expect_equal(torch::isfinite(longs.to(cuda)).to(torch::kFloat), torch::isfinite(longs).to(torch::kFloat));
  auto padded = F::pad(dx, F::PadFuncOptions({1, 2, 0, 1}).value(0.5));
  expect_equal(padded, F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).value(0.5)));
  auto normed = F::local_response_norm(dx, F::LocalResponseNormFuncOptions(3));
  expect_close(normed, F::local_response_norm(x, F::LocalResponseNormFuncOptions(3)));
  (padded.sum() + normed.pow(2).sum() + std::get<0>(dx.reshape({2, -1}).max(1)).sum()).backward();
  EXPECT_TRUE(dx.grad().is_cuda());
  auto xc = x.clone().requires_grad_(true);
  (F::pad(xc, F::PadFuncOptions({1, 2, 0, 1}).value(0.5)).sum() +
   F::local_response_norm(xc, F::LocalResponseNormFuncOptions(3)).pow(2).sum() +
   std::get<0>(xc.reshape({2, -1}).max(1)).sum())
      .backward();
  expect_close(dx.grad(), xc.grad());
}
TEST_F(FakeCuda, CompositesMakeTheirFillsOnTheInputsDevice) { composites_make_their_fills_on_the_inputs_device(cuda); }

// The same on a GPU (scripts/gpu-check.sh).
TEST(CudaGpu, OpsMixingDevicesThrowAndCompositesStayOnTheDevice) {
  if (!kiln::cuda_driver::available() || kiln::cuda_driver::fake_device())
    GTEST_SKIP() << "no CUDA device: " << kiln::cuda_driver::unavailable_reason();
  const torch::Device cuda("cuda:0");
  ops_mixing_devices_name_the_op_and_both_devices(cuda);
  composites_make_their_fills_on_the_inputs_device(cuda);
}

TEST_F(FakeCuda, GradientsReturnToTheDeviceOfTheirInput) {
  auto x = torch::tensor({1.f, 2.f, 3.f}, torch::requires_grad());
  auto y = x.to(cuda);
  EXPECT_FALSE(y.is_leaf());
  (y * y).sum().backward();
  EXPECT_TRUE(x.grad().is_cpu());
  expect_equal(x.grad(), torch::tensor({2.f, 4.f, 6.f}));
  auto w = torch::ones({3}, torch::TensorOptions().device(cuda).requires_grad(true));
  (w * y.detach()).sum().cpu().backward();
  EXPECT_TRUE(w.grad().is_cuda());
  expect_equal(w.grad(), torch::tensor({1.f, 2.f, 3.f}));
}

namespace {

struct TrainResult {
  std::vector<float> losses;
  std::vector<torch::Tensor> parameters;  // on the CPU
};

// A few steps of an MLP with batch norm (buffers updated in place) and an optimizer with state,
// everything on `device`.
TrainResult train(torch::Device device, bool adam) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(4, 8), torch::nn::BatchNorm1d(8), torch::nn::ReLU(),
                            torch::nn::Linear(8, 1));
  net->to(device);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (adam)
    optimizer = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(0.01));
  else
    optimizer = std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto x = torch::randn({16, 4}).to(device);
  auto target = torch::randn({16, 1}, device);
  TrainResult result;
  for (int step = 0; step < 5; ++step) {
    optimizer->zero_grad();
    auto loss = torch::mse_loss(net->forward(x), target);
    loss.backward();
    optimizer->step();
    EXPECT_EQ(loss.device(), device);
    result.losses.push_back(loss.item<float>());
  }
  for (const auto& p : net->parameters()) {
    EXPECT_EQ(p.device(), device);
    EXPECT_EQ(p.grad().device(), device);
    result.parameters.push_back(p.cpu());
  }
  for (const auto& b : net->buffers()) EXPECT_EQ(b.device(), device);
  return result;
}

}  // namespace

// Training on `device` gives the CPU's losses and parameters, within float rounding.
void expect_training_matches_the_cpu(const torch::Device& device) {
  for (bool adam : {false, true}) {
    SCOPED_TRACE(adam ? "Adam" : "SGD");
    const TrainResult cpu = train(torch::kCPU, adam), gpu = train(device, adam);
    ASSERT_EQ(cpu.losses.size(), gpu.losses.size());
    for (size_t i = 0; i < cpu.losses.size(); ++i) EXPECT_NEAR(cpu.losses[i], gpu.losses[i], 1e-5) << "step " << i;
    ASSERT_EQ(cpu.parameters.size(), gpu.parameters.size());
    // Except, with Adam, the bias of the layer before batch norm: batch norm subtracts it again, so
    // its gradient is rounding noise, which Adam's normalized step turns into steps of +-lr.
    for (size_t i = 0; i < cpu.parameters.size(); ++i)
      if (!(adam && i == 1)) expect_close(cpu.parameters[i], gpu.parameters[i]);
    EXPECT_LT(gpu.losses.back(), gpu.losses.front());
  }
}

TEST_F(FakeCuda, TrainingOnTheDeviceMatchesTheCpu) { expect_training_matches_the_cpu(cuda); }

// The same on a GPU (scripts/gpu-check.sh), and a few values read back through the host.
TEST(CudaGpu, TrainingOnTheDeviceMatchesTheCpu) {
  if (!kiln::cuda_driver::available()) GTEST_SKIP() << "no CUDA device: " << kiln::cuda_driver::unavailable_reason();
  const torch::Device cuda("cuda:0");
  expect_training_matches_the_cpu(cuda);
  auto x = torch::arange(6, torch::kFloat).reshape({2, 3});
  auto y = x.to(cuda);
  EXPECT_FLOAT_EQ((y * 2).sum().item<float>(), 30.f);
  EXPECT_EQ((y + 1).cpu().to_vector<float>(), (x + 1).to_vector<float>());
  EXPECT_EQ(std::get<0>(y.sort(1, true)).cpu().to_vector<float>(), std::get<0>(x.sort(1, true)).to_vector<float>());
  EXPECT_GT(kiln::cuda::memory_allocated(0), 0u);
}

TEST_F(FakeCuda, ClassifierLayersStayOnTheDevice) {
  // Ops that make tensors of their own inside (index tensors, masks, one-hot targets).
  torch::manual_seed(1);
  torch::nn::Sequential net(torch::nn::Embedding(10, 6), torch::nn::Flatten(), torch::nn::Dropout(0.5),
                            torch::nn::Linear(12, 5), torch::nn::LogSoftmax(1));
  net->to(cuda);
  auto tokens = torch::randint(10, {8, 2}, torch::kLong).to(cuda);
  auto labels = torch::randint(5, {8}, torch::kLong).to(cuda);
  auto out = net->forward(tokens);
  EXPECT_TRUE(out.is_cuda());
  auto loss = torch::nll_loss(out, labels) + torch::cross_entropy(out, labels, torch::Reduction::Mean, 0.1);
  loss.backward();
  EXPECT_TRUE(loss.is_cuda());
  for (const auto& p : net->parameters()) EXPECT_TRUE(p.grad().is_cuda());
  EXPECT_TRUE(out.argmax(1).eq(labels).sum().is_cuda());
  EXPECT_TRUE(torch::one_hot(labels, 5).is_cuda());
  EXPECT_TRUE(out.index_select(0, torch::arange(3).to(cuda)).is_cuda());
  EXPECT_THROW_WITH(out.index_select(0, torch::arange(3)), "found at least two devices");
}

TEST_F(FakeCuda, ConvolutionPoolingAndIndexingStayOnTheDevice) {
  // Ops that read tables made on the host (windows, divisors, flips, masks).
  torch::manual_seed(2);
  torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3).padding(1)), torch::nn::ReLU(),
                            torch::nn::MaxPool2d(2), torch::nn::AvgPool2d(2), torch::nn::AdaptiveAvgPool2d(1),
                            torch::nn::Flatten(), torch::nn::Linear(4, 3));
  net->to(cuda);
  auto x = torch::randn({2, 1, 8, 8}).to(cuda);
  auto out = net->forward(x);
  out.sum().backward();
  EXPECT_TRUE(out.is_cuda());
  for (const auto& p : net->parameters()) EXPECT_TRUE(p.grad().is_cuda());
  EXPECT_TRUE(std::get<1>(torch::adaptive_max_pool2d(x, {3, 3})).is_cuda());
  EXPECT_TRUE(x.flip({2}).tril().is_cuda());
  EXPECT_TRUE(torch::upsample_bilinear2d(x, {12, 12}, false).is_cuda());
  EXPECT_TRUE(torch::nonzero(x > 0).is_cuda());
  auto y = x.clone();
  y.index_put_({y > 0}, 0.f);
  EXPECT_TRUE(y.is_cuda());
  EXPECT_TRUE(x.index({torch::tensor({-1, 0}).to(cuda)}).is_cuda());
  expect_equal(torch::max_pool2d(x, 2), torch::max_pool2d(x.cpu(), 2));
}

TEST_F(FakeCuda, ModulesMoveAndMixingThemFails) {
  torch::nn::Linear net(3, 2);
  auto x = torch::randn({4, 3});
  net->to(cuda);
  EXPECT_TRUE(net->weight.is_cuda());
  EXPECT_TRUE(net->weight.requires_grad());
  EXPECT_TRUE(net->weight.is_leaf());
  EXPECT_THROW_WITH(net->forward(x), "found at least two devices");
  EXPECT_TRUE(net->forward(x.to(cuda)).is_cuda());
  net->to(torch::kCPU);
  EXPECT_TRUE(net->bias.is_cpu());
  EXPECT_TRUE(net->forward(x).is_cpu());
}

TEST_F(FakeCuda, TheDeviceAllocatorCountsItsMemory) {
  const size_t before = kiln::cuda::memory_allocated();
  auto& allocator = kiln::cuda::device_allocator(0);
  void* p = allocator.allocate(3 << 20);
  EXPECT_EQ(kiln::cuda::memory_allocated(), before + (3 << 20));
  EXPECT_GE(kiln::cuda::max_memory_allocated(), before + (3 << 20));
  EXPECT_GE(kiln::cuda::memory_reserved(), kiln::cuda::memory_allocated());
  allocator.free(p);
  EXPECT_EQ(kiln::cuda::memory_allocated(), before);
  kiln::cuda::empty_cache();
  EXPECT_EQ(kiln::cuda::memory_reserved(), 0u);
  EXPECT_EQ(kiln::cuda_driver::device_properties(0).name, "kiln's fake CUDA device (host memory)");
  EXPECT_THROW_WITH(kiln::cuda_driver::device_properties(1), "CUDA device 1 does not exist (1 device(s))");
}

// On a machine with a GPU (scripts/gpu-check.sh): the driver's entry points, device memory
// through the caching allocator, a round trip through pinned staging, and out of memory.
TEST(CudaDevice, RealDeviceMemoryRoundTrip) {
  namespace driver = kiln::cuda_driver;
  if (!driver::available()) GTEST_SKIP() << "no CUDA device: " << driver::unavailable_reason();
  const driver::DeviceProperties p = driver::device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 5);
  EXPECT_GT(p.total_memory, size_t(1) << 30);
  std::printf("cuda:0 is %s, sm_%d%d, %d SMs, %.1f GiB; driver for CUDA %s\n", p.name.c_str(), p.major, p.minor,
              p.multiprocessors, double(p.total_memory) / double(1 << 30), driver::driver_version().c_str());
  auto& device = kiln::cuda::device_allocator(0);
  auto& pinned = kiln::cuda::pinned_allocator();
  constexpr size_t n = 3 << 20;
  auto* staging = static_cast<unsigned char*>(pinned.allocate(n));
  for (size_t i = 0; i < n; ++i) staging[i] = static_cast<unsigned char>(i * 7);
  void* memory = device.allocate(n);
  EXPECT_EQ(kiln::cuda::memory_allocated(0), n);
  driver::CUstream stream;
  KILN_CU(cuStreamCreate, &stream, driver::CU_STREAM_NON_BLOCKING);
  const auto ptr = static_cast<driver::CUdeviceptr>(reinterpret_cast<uintptr_t>(memory));
  KILN_CU(cuMemcpyHtoDAsync, ptr, staging, n, stream);
  std::vector<unsigned char> back(n);
  KILN_CU(cuMemcpyDtoHAsync, back.data(), ptr, n, stream);
  KILN_CU(cuStreamSynchronize, stream);
  EXPECT_EQ(std::memcmp(back.data(), staging, n), 0);
  KILN_CU(cuStreamDestroy, stream);
  pinned.free(staging);
  // More than the device has: out of memory, saying how much, and the allocator still serves.
  try {
    device.allocate(p.total_memory * 2);
    ADD_FAILURE() << "expected out of memory";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0: out of memory. Tried to allocate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the device has"), std::string::npos) << e.what();
  }
  device.free(memory);
  void* again = device.allocate(n);
  EXPECT_EQ(again, memory);  // the cached block
  device.free(again);
  kiln::cuda::empty_cache();
  EXPECT_EQ(kiln::cuda::memory_reserved(0), 0u);
  EXPECT_THROW_WITH(driver::check(driver::CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"),
                    "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
}
