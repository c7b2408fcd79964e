// The CUDA backend (codegen/cuda/launcher.h) end to end without a GPU, on the fake device of
// tests/cuda_fake_driver.h: random programs, forward and backward, run with every flush's kernel
// list launched by the CUDA backend (host inputs uploaded, kernels loaded and launched with
// their arguments, GEMMs through the cuBLAS table, kernels without CUDA source on the host,
// results copied back) match the interpreter. Few structures, so that few kernels compile.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <cstdlib>

#include "codegen/backend.h"
#include "codegen/cuda/launcher.h"
#include "cuda_fake_driver.h"
#include "flush_capture.h"
#include "random_program.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/stats.h"
#include "tracer/storage.h"

namespace {

using namespace kiln;

struct FakeCudaBackend : ::testing::Test {
  FakeCudaBackend() { kiln_test::use_fake_cuda(true); }
  ~FakeCudaBackend() override { kiln_test::use_fake_cuda(false); }
  void SetUp() override {
    if (std::system("c++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler (c++)";
  }
};

// `programs` random programs over `structures` structures, each run with its flushes on the
// interpreter and on the CUDA backend of device 0; returns how many differ (reported).
int differential(int programs, int structures, uint64_t first_structure) {
  int failures = 0;
  for (int i = 0; i < programs && failures < 3; ++i) {
    const uint64_t structure = uint64_t(i % structures);
    fuzz::Program p = fuzz::generate(first_structure + structure, uint64_t(i), 5 + int(structure % 5));
    if (i % 4 == 3) p.dtype = kDouble;
    fuzz::Result expected, actual;
    flush_capture::with_partition_runner([](const fusion::Partition& k) { codegen::interpreter().run(k); },
                                         [&] { expected = fuzz::run(p); });
    flush_capture::with_partition_runner([](const fusion::Partition& k) { codegen::cuda_backend(0).run(k); },
                                         [&] { actual = fuzz::run(p); });
    const std::string diff = fuzz::compare(expected, actual, p.dtype);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << "program " << i << " differs: " << diff << "\n" << p.to_string();
    }
  }
  return failures;
}

TEST_F(FakeCudaBackend, RandomProgramsMatchTheInterpreter) {
  const kiln_test::FakeCudaCounts before = kiln_test::fake_cuda_counts();
  EXPECT_EQ(differential(6, 3, 9100), 0);
  const kiln_test::FakeCudaCounts after = kiln_test::fake_cuda_counts();
  std::printf("[fake cuda] %d modules loaded (%d compiled for the host), %d launches, %d GEMMs\n",
              after.modules - before.modules, after.compiled - before.compiled, after.launches - before.launches,
              after.gemms - before.gemms);
  EXPECT_GT(after.launches - before.launches, 20);
}

// On a GPU (scripts/gpu-check.sh): KILN_GPU_PROGRAMS random programs (default 2000), forward and
// backward, float32 and float64, through NVRTC, the driver and cuBLAS.
TEST(CudaGpu, RandomProgramsMatchTheInterpreter) {
  if (!cuda_driver::available() || cuda_driver::fake_device())
    GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  const char* count = std::getenv("KILN_GPU_PROGRAMS");
  EXPECT_EQ(differential(count ? std::atoi(count) : 2000, 100, 9200), 0);
  std::printf("[cuda] %lld launches, %lld kernels run on the host\n", (long long)stats().kernel_launches,
              (long long)stats().cuda_host_fallbacks);
}

// Tensors on the device: values stay in device memory between flushes (each read by a kernel
// from there, not uploaded again), matmul goes through cuBLAS, and a kernel without CUDA source
// (a sort) runs on the host and is counted.
TEST_F(FakeCudaBackend, DeviceTensorsRunOnTheBackend) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(3);
  auto a = torch::randn({5, 7}), b = torch::randn({7, 3});
  auto da = a.to(cuda), db = b.to(cuda);
  const kiln_test::FakeCudaCounts before = kiln_test::fake_cuda_counts();
  auto product = da.matmul(db).relu() * 2;
  const auto host = product.cpu();
  EXPECT_TRUE(host.is_cpu());
  EXPECT_TRUE(torch::allclose(host, a.matmul(b).relu() * 2, 1e-5, 1e-6));
  EXPECT_GT(kiln_test::fake_cuda_counts().gemms, before.gemms);
  EXPECT_GT(kiln_test::fake_cuda_counts().launches, before.launches);
  const int64_t fallbacks = stats().cuda_host_fallbacks;
  auto sorted = std::get<0>(da.sort(1));
  EXPECT_TRUE(sorted.is_cuda());
  EXPECT_TRUE(torch::equal(sorted.cpu(), std::get<0>(a.sort(1))));
  EXPECT_GT(stats().cuda_host_fallbacks, fallbacks);
  EXPECT_FLOAT_EQ(da.sum().item<float>(), a.sum().item<float>());
  EXPECT_GT(kiln::cuda::memory_allocated(0), 0u);  // da, db, product
}

// A segment with host work beside device work runs each on its own device: the host's steps on
// the CPU backend (a sort there is no host fallback of the CUDA backend), the device's launched,
// and values cross in the copies the program asked for.
TEST_F(FakeCudaBackend, ASegmentMixingHostAndDeviceWorkRunsEachOnItsDevice) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(5);
  auto a = torch::randn({4, 6}), b = torch::randn({4, 6});
  auto da = a.to(cuda);
  const int64_t fallbacks = stats().cuda_host_fallbacks, flushes = stats().flushes;
  const int launches = kiln_test::fake_cuda_counts().launches;
  auto on_device = (da * 2).relu();
  auto on_host = std::get<0>((b * 3).sort(1));
  auto mixed = on_device + on_host.to(cuda) * torch::tensor(0.5f);
  auto back = on_device.cpu() - on_host.exp();
  tracer::flush();
  EXPECT_EQ(stats().flushes, flushes + 1);
  EXPECT_EQ(stats().cuda_host_fallbacks, fallbacks);
  EXPECT_GT(kiln_test::fake_cuda_counts().launches, launches);
  EXPECT_TRUE(mixed.is_cuda() && back.is_cpu() && on_host.is_cpu());
  const auto sorted = std::get<0>((b * 3).sort(1));
  EXPECT_TRUE(torch::allclose(mixed.cpu(), (a * 2).relu() + sorted * 0.5f));
  EXPECT_TRUE(torch::allclose(back, (a * 2).relu() - sorted.exp()));
  EXPECT_TRUE(torch::equal(on_host, sorted));
}

// Narrow dtypes have CUDA kernels of their own (no host fallback) and give the CPU's values.
TEST_F(FakeCudaBackend, NarrowDtypesRunOnTheDevice) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(6);
  const auto a = torch::randn({4, 9}) * 20;
  const int64_t fallbacks = stats().cuda_host_fallbacks;
  for (auto t : {torch::kHalf, torch::kBFloat16, torch::kInt, torch::kChar, torch::kByte}) {
    auto on_cpu = a.to(t), on_device = a.to(cuda).to(t);
    auto expected = (on_cpu * on_cpu + on_cpu).amax(1);
    auto actual = (on_device * on_device + on_device).amax(1);
    EXPECT_TRUE(actual.is_cuda());
    EXPECT_EQ(actual.dtype(), t);
    EXPECT_TRUE(torch::equal(actual.cpu(), expected)) << t;
  }
  EXPECT_EQ(stats().cuda_host_fallbacks, fallbacks);
}

}  // namespace
