// The CUDA backend (codegen/cuda/launcher.h) end to end without a GPU, on the fake device of
// tests/cuda_fake_driver.h: random programs, forward and backward, run with every flush's kernel
// list launched by the CUDA backend (host inputs uploaded, kernels loaded and launched with
// their arguments, GEMMs through the cuBLAS table, kernels without CUDA source on the host,
// results copied back) match the interpreter. Few structures, so that few kernels compile.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "codegen/backend.h"
#include "codegen/cuda/compile_queue.h"
#include "codegen/cuda/kernel_cache.h"
#include "codegen/cuda/launcher.h"
#include "codegen/cuda/nvrtc.h"
#include "codegen/cuda/per_op.h"
#include "codegen/flush.h"
#include "cuda_fake_driver.h"
#include "fake_cuda_test.h"
#include "flush_capture.h"
#include "fusion/device_split.h"
#include "random_program.h"
#include "runtime/config.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/stats.h"
#include "tracer/flush_hook.h"
#include "tracer/storage.h"

namespace {

using namespace kiln;

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
// (a scatter-add into float16) runs on the host and is counted.
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
  const auto index = torch::tensor({2, 0, 2}, torch::kLong);
  auto added = torch::zeros({3, 7}, torch::kHalf), dadded = added.to(cuda);
  added.index_put_({index}, a.narrow(0, 0, 3).to(torch::kHalf), /*accumulate=*/true);
  dadded.index_put_({index.to(cuda)}, da.narrow(0, 0, 3).to(torch::kHalf), /*accumulate=*/true);
  EXPECT_TRUE(dadded.is_cuda());
  EXPECT_TRUE(torch::equal(dadded.cpu(), added));
  EXPECT_GT(stats().cuda_host_fallbacks, fallbacks);
  EXPECT_FLOAT_EQ(da.sum().item<float>(), a.sum().item<float>());
  EXPECT_GT(kiln::cuda::memory_allocated(0), 0u);  // da, db, product
}

// Sorts, argsort, topk, kthvalue, median, mode, searchsorted and the value scans are device
// kernels (no host fallback): stable as libtorch's sort (ties keep their order, NaN above every
// number), rows in shared memory and rows past one tile (2048, merged in device memory), scans a
// block per long row; positions equal the CPU's, values within rounding, gradients through them.
// `extra_length`: a longer row also sorted (on a GPU: many merge passes).
void sorts_and_scans_match_the_cpu(int64_t extra_length) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(8);
  auto ties = (torch::randn({3, 3000}) * 40).round();
  ties = ties.masked_fill(ties > 70, NAN);
  const auto distinct = torch::randn({4, 2500}), counts = torch::randint(0, 4, {5, 12}, torch::kLong);
  const auto dties = ties.to(cuda), ddistinct = distinct.to(cuda), dcounts = counts.to(cuda);
  const int64_t fallbacks = stats().cuda_host_fallbacks;
  auto same = [](const torch::Tensor& on_device, const torch::Tensor& on_host) {
    EXPECT_TRUE(on_device.is_cuda());
    const auto back = on_device.cpu();
    EXPECT_EQ(back.sizes(), on_host.sizes());
    EXPECT_TRUE(back.is_floating_point() ? torch::allclose(back, on_host, 1e-5, 1e-5, /*equal_nan=*/true)
                                         : torch::equal(back, on_host));
  };
  const auto narrow = ties.narrow(1, 0, 50), dnarrow = dties.narrow(1, 0, 50);
  same(std::get<1>(dties.sort(1)), std::get<1>(ties.sort(1)));
  same(std::get<1>(dties.sort(std::optional<bool>(true), 1, true)),
       std::get<1>(ties.sort(std::optional<bool>(true), 1, true)));
  same(std::get<0>(dties.sort(1, true)), std::get<0>(ties.sort(1, true)));
  same(dnarrow.t().argsort(0, true), narrow.t().argsort(0, true));
  same(dcounts.argsort(1), counts.argsort(1));
  same(std::get<1>(ddistinct.topk(5, 1)), std::get<1>(distinct.topk(5, 1)));
  same(std::get<1>(ddistinct.topk(3, 1, /*largest=*/false)), std::get<1>(distinct.topk(3, 1, false)));
  same(std::get<1>(ddistinct.kthvalue(7, 1)), std::get<1>(distinct.kthvalue(7, 1)));
  same(std::get<1>(dnarrow.median(1)), std::get<1>(narrow.median(1)));
  same(std::get<1>(dnarrow.nanmedian(1)), std::get<1>(narrow.nanmedian(1)));
  same(std::get<1>(dcounts.mode(1)), std::get<1>(counts.mode(1)));
  const auto bounds = std::get<0>(distinct.narrow(1, 0, 64).sort(1));
  same(torch::searchsorted(bounds.to(cuda), ddistinct.narrow(1, 100, 9)),
       torch::searchsorted(bounds, distinct.narrow(1, 100, 9)));
  same(ddistinct.cumsum(1), distinct.cumsum(1));
  same((1 + ddistinct * 0.01).cumprod(1), (1 + distinct * 0.01).cumprod(1));
  same(ddistinct.logcumsumexp(1), distinct.logcumsumexp(1));
  same(dcounts.repeat({1, 40}).cumsum(1), counts.repeat({1, 40}).cumsum(1));
  EXPECT_EQ(stats().cuda_host_fallbacks, fallbacks);
  // Gradients flow back through the device's sort and scan as through the CPU's (float64).
  const auto x = torch::randn({3, 200}, torch::kDouble).requires_grad_(true),
             w = torch::randn({3, 200}, torch::kDouble);
  auto loss = [&](const torch::Tensor& in) {
    return (std::get<0>(in.sort(1, true)) * w.to(in.device()) + in.cumsum(1).pow(2) * 0.1).sum();
  };
  const auto expected = torch::autograd::grad({loss(x)}, {x})[0];
  const auto actual = torch::autograd::grad({loss(x.to(cuda))}, {x})[0];
  EXPECT_TRUE(actual.is_cpu());
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-12, 1e-12));
  if (extra_length > 0) {
    const auto longer = (torch::randn({2, extra_length}) * 1000).round();
    same(std::get<1>(longer.to(cuda).sort(1, true)), std::get<1>(longer.sort(1, true)));
    same(longer.to(cuda).cumsum(1), longer.cumsum(1));
  }
}

TEST_F(FakeCudaBackend, SortsAndScansRunOnTheDevice) { sorts_and_scans_match_the_cpu(0); }

// The same through NVRTC and the driver (scripts/gpu-check.sh), with a row of a million.
TEST(CudaGpu, SortsAndScansRunOnTheDevice) {
  if (!cuda_driver::available() || cuda_driver::fake_device())
    GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  sorts_and_scans_match_the_cpu(1 << 20);
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

// ctc_loss and embedding_bag build their index tables on the host and move them to their input's
// device: on CUDA inputs they run there (no mixing of devices) and give the CPU's values and
// gradients.
TEST_F(FakeCudaBackend, CtcLossAndEmbeddingBagRunOnTheirInputsDevice) {
  namespace F = torch::nn::functional;
  const torch::Device cuda("cuda:0");
  torch::manual_seed(14);
  const auto logits = torch::randn({6, 3, 5}, torch::kDouble);
  const auto targets = torch::tensor({{1, 2, 2}, {3, 1, 0}, {4, 0, 0}}, torch::kLong);
  const auto input_lengths = torch::tensor({6, 5, 4}, torch::kLong), target_lengths = torch::tensor({3, 2, 1});
  auto ctc = [&](const torch::Device& device) {
    const auto x = logits.detach().to(device).requires_grad_(true);
    auto loss = F::ctc_loss(x.log_softmax(2), targets.to(device), input_lengths, target_lengths,
                            F::CTCLossFuncOptions().reduction(torch::kMean));
    EXPECT_EQ(loss.device(), device);
    loss.backward();
    return std::pair{loss.cpu(), x.grad().cpu()};
  };
  const auto [loss, grad] = ctc(torch::kCPU);
  const auto [dloss, dgrad] = ctc(cuda);
  EXPECT_TRUE(torch::allclose(dloss, loss, 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(dgrad, grad, 1e-12, 1e-12));
  const auto weight = torch::randn({5, 3}, torch::kDouble);
  using Mode = kiln::nn::EmbeddingBagMode;
  for (const Mode& mode : {Mode(torch::kSum), Mode(torch::kMean), Mode(torch::kMax)}) {
    auto bag = [&](const torch::Device& device) {
      const auto w = weight.detach().to(device).requires_grad_(true);
      auto out = F::embedding_bag(
          torch::tensor({0, 2, 2, 4, 1, 2, 0}, torch::kLong).to(device), w,
          F::EmbeddingBagFuncOptions()
              .offsets(torch::tensor({0, 3, 5}, torch::kLong).to(device))
              .mode(mode)
              .padding_idx(1)
              .per_sample_weights(mode.name() == "sum" ? torch::rand({7}, torch::kDouble).to(device) : torch::Tensor())
              .scale_grad_by_freq(mode.name() == "mean"));
      EXPECT_EQ(out.device(), device);
      out.sum().backward();
      return std::pair{out.cpu(), w.grad().cpu()};
    };
    torch::manual_seed(15);
    const auto [out, wgrad] = bag(torch::kCPU);
    torch::manual_seed(15);
    const auto [dout, dwgrad] = bag(cuda);
    EXPECT_TRUE(torch::allclose(dout, out, 1e-12, 1e-12)) << mode.name();
    EXPECT_TRUE(torch::allclose(dwgrad, wgrad, 1e-12, 1e-12)) << mode.name();
  }
}

// Background compilation (KILN_COMPILE=background, the default outside the tests): a flush that
// misses a fused kernel queues its compile and runs the kernel node by node on the per-op
// kernels (codegen/cuda/per_op.h); the next flush after the compile finished launches it fused.
struct CompilingInTheBackground : FakeCudaBackend {
  CompilingInTheBackground() : saved(config().compile_in_background) { config().compile_in_background = true; }
  ~CompilingInTheBackground() override {
    codegen::cuda::wait_for_background_compiles();
    config().compile_in_background = saved;
  }
  const bool saved;
};

// Each value computed by both paths: first per-op (nothing compiled in this process), then fused.
template <typename Step>
void per_op_then_fused(Step step, const std::string& what) {
  const Stats before = stats();
  const int launches = kiln_test::fake_cuda_counts().launches;
  const std::vector<torch::Tensor> per_op = step();
  tracer::flush();  // `.cpu()` is traced too: the flush runs it
  const Stats first = stats();
  const int per_op_launches = kiln_test::fake_cuda_counts().launches - launches;
  EXPECT_GT(first.kernels_unfused, before.kernels_unfused) << what;
  EXPECT_EQ(first.flushes_unfused, before.flushes_unfused + 1) << what;
  codegen::cuda::wait_for_background_compiles();
  EXPECT_EQ(codegen::cuda::compile_queue().pending(), 0);
  const int fused_from = kiln_test::fake_cuda_counts().launches;
  const std::vector<torch::Tensor> fused = step();
  tracer::flush();
  EXPECT_EQ(stats().kernels_unfused, first.kernels_unfused) << what << ": the compiled kernels were not swapped in";
  EXPECT_LT(kiln_test::fake_cuda_counts().launches - fused_from, per_op_launches) << what;
  ASSERT_EQ(per_op.size(), fused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_TRUE(per_op[i].is_cpu() && fused[i].is_cpu());
    ASSERT_EQ(per_op[i].dtype(), fused[i].dtype());
    const auto dtype = fused[i].scalar_type();
    const double tolerance = dtype == torch::kHalf || dtype == torch::kBFloat16 ? 1e-2 : 1e-6;
    EXPECT_TRUE(fused[i].is_floating_point()
                    ? torch::allclose(per_op[i], fused[i], tolerance, tolerance, /*equal_nan=*/true)
                    : torch::equal(per_op[i], fused[i]))
        << what << ", output " << i << ":\n"
        << per_op[i] << "\n"
        << fused[i];
  }
}

TEST_F(CompilingInTheBackground, AColdFlushRunsPerOpKernelsUntilTheFusedKernelIsBuilt) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(11);
  const auto x = torch::randn({6, 9}), y = torch::randn({9});
  const auto dx = x.to(cuda), dy = y.to(cuda);
  tracer::flush();
  auto expression = [](const torch::Tensor& a, const torch::Tensor& b) {
    const auto t = (a * 2.5 + b).tanh() * a;
    return std::vector<torch::Tensor>{t.sum(1), t.amax(0), torch::softmax(a, 1)};
  };
  per_op_then_fused(
      [&] {
        auto out = expression(dx, dy);
        for (auto& o : out) o = o.cpu();
        return out;
      },
      "float32");
  const auto expected = expression(x, y), actual = expression(dx, dy);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(torch::allclose(actual[i].cpu(), expected[i], 1e-5, 1e-6));
}

// Every dtype class: loads and stores of each dtype, casts, comparisons, where, true division
// of integers (in float64), wrapping integer arithmetic, sums and maxima.
TEST_F(CompilingInTheBackground, PerOpKernelsGiveTheFusedKernelsValuesInEveryDtype) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(12);
  const auto a = torch::randn({4, 5}) * 10, b = torch::randn({5}) * 10 + 0.5;
  for (auto t : {torch::kFloat, torch::kDouble, torch::kHalf, torch::kBFloat16, torch::kInt, torch::kLong, torch::kByte,
                 torch::kBool}) {
    const auto da = a.to(cuda).to(t), db = b.to(cuda).to(t);
    tracer::flush();  // the inputs in device memory, so that both runs flush the same kernels
    per_op_then_fused(
        [&] {
          std::vector<torch::Tensor> out = {torch::where(da > db, da.to(torch::kDouble), db.to(torch::kFloat) - 3),
                                            (da != db).to(torch::kInt) + da.to(torch::kLong),
                                            da.to(torch::kFloat).sum(0), da.to(torch::kFloat).amax(1)};
          if (t != torch::kBool) {
            out.push_back(da / db);
            out.push_back(da * db + da);
            out.push_back(da.sum(1));
          }
          for (auto& o : out) o = o.cpu();
          return out;
        },
        [&] {
          std::ostringstream name;
          name << t;
          return name.str();
        }());
  }
}

// Eager mode (KILN_LAZY=0) runs each op on the per-op kernels at once: no fused kernel compiles.
TEST_F(FakeCudaBackend, EagerModeRunsThePerOpKernels) {
  const torch::Device cuda("cuda:0");
  torch::manual_seed(16);
  const auto x = torch::randn({5, 8}), dx = x.to(cuda);
  tracer::flush();
  const bool lazy = is_lazy();
  set_lazy(false);
  (dx.t() * 2 - 3).exp().sum(0).cpu();  // loads the per-op modules of these ops
  const int64_t unfused = stats().kernels_unfused;
  const int modules = kiln_test::fake_cuda_counts().modules;
  const auto y = ((dx * 0.5 - 1).exp() * dx).sum(1).cpu();
  set_lazy(lazy);
  EXPECT_GE(stats().kernels_unfused, unfused + 4);  // Mul, Sub, Exp, Mul, Sum: one op each
  EXPECT_EQ(kiln_test::fake_cuda_counts().modules, modules) << "a fused kernel was loaded in eager mode";
  EXPECT_TRUE(torch::allclose(y, ((x * 0.5 - 1).exp() * x).sum(1), 1e-5, 1e-6));
}

// The host's side of a per-op launch (arguments, the function looked up, the fake driver's launch
// of one block on a one-element tensor): a kernel of 240 nodes runs as 240 launches.
TEST_F(CompilingInTheBackground, PerOpLaunchesTakeLittleHostTime) {
  const torch::Device cuda("cuda:0");
  const auto x = torch::full({1}, 0.25), dx = x.to(cuda);
  tracer::flush();
  auto chain = [](torch::Tensor v, int links) {
    for (int i = 0; i < links; ++i) v = (v * 1.5 + 0.25).tanh();
    return v;
  };
  chain(dx, 2).cpu();  // loads the modules of Mul, Add, Tanh and Const
  tracer::flush();
  const int launches = kiln_test::fake_cuda_counts().launches;
  const int64_t unfused = stats().kernels_unfused;
  const auto start = std::chrono::steady_clock::now();
  const auto out = chain(dx, 60).cpu();
  tracer::flush();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  const int count = kiln_test::fake_cuda_counts().launches - launches;
  EXPECT_EQ(stats().kernels_unfused, unfused + 1);
  EXPECT_GE(count, 180);  // Mul, Add, Tanh per link; the constants too unless folded
  std::printf("[per-op] %d launches in %.0f us: %.1f us each (tracing, the flush and the fake driver included)\n",
              count, us, us / count);
  EXPECT_LT(us / count, 500.0);
  EXPECT_TRUE(torch::allclose(out, chain(x, 60), 1e-6, 1e-6));
}

// Time spent in flushes, timed_flush being the hook: the whole flush, and the CUDA backend's run
// of the kernel list (the rest: the plan, its rewrites and its partition from the cache). As
// codegen::flush for a segment wholly on cuda:0.
double g_flush_us = 0, g_launcher_us = 0;
void timed_flush(std::vector<ir::NodePtr> roots, const ir::RecordedNodes* recorded) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  fusion::Plan plan = fusion::make_plan(std::move(roots), recorded);
  if (plan.steps.empty()) return;
  stats_add(&Stats::flushes, 1);
  fusion::eliminate_common_subexpressions(plan);
  fusion::simplify(plan);
  ASSERT_TRUE(fusion::split_by_device(plan).empty()) << "a segment on more than one device";
  const fusion::Partition& partition = fusion::partition_cached(plan);
  const auto launching = Clock::now();
  codegen::cuda_backend(0).run(partition);
  g_launcher_us += std::chrono::duration<double, std::micro>(Clock::now() - launching).count();
  fusion::forget_computed_inputs(plan);
  g_flush_us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The host's time per launched kernel in a training loop's steady state (every kernel loaded,
// each step's segments found in the partition cache): the step's wall time (tracing, the flush,
// the launches' arguments and the driver calls) per launch, the fastest of 10 rounds (the machine
// may be loaded); on the fake device with its driver running no kernels, less its copies, and on
// a GPU not waiting for it. KILN_HOST_TIME_STEPS sets the steps of a round.
void host_time_per_launch(double limit_us) {
  const bool fake = cuda_driver::fake_device();
  MlpStep step(torch::Device("cuda:0"));
  const float first = step().item<float>();
  for (int i = 0; i < 3; ++i) step();  // every kernel loaded, every segment's partition cached
  codegen::cuda::wait_for_background_compiles();
  step();
  EXPECT_LT(step().item<float>(), first);
  const char* steps_env = std::getenv("KILN_HOST_TIME_STEPS");
  const int steps = steps_env ? std::atoi(steps_env) : 40;
  const Stats before = stats();
  if (fake) kiln_test::fake_cuda_skip_kernels(true);
  tracer::set_flush_hook(&timed_flush);
  double best = 1e30, best_flush = 0, best_launcher = 0;
  int64_t launches = 0;
  for (int round = 0; round < 10; ++round) {
    if (!fake) torch::cuda::synchronize();  // the GPU idle: the host's time alone
    const kiln_test::FakeCudaCounts fake_before = kiln_test::fake_cuda_counts();
    const int64_t launches_before = stats().kernel_launches;
    g_flush_us = g_launcher_us = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    launches = stats().kernel_launches - launches_before;
    const double device_us = fake ? double(kiln_test::fake_cuda_counts().device_ns - fake_before.device_ns) / 1000 : 0;
    if (us - device_us < best)
      best = us - device_us, best_flush = g_flush_us - device_us, best_launcher = g_launcher_us - device_us;
  }
  codegen::install_flush_driver();
  if (fake) kiln_test::fake_cuda_skip_kernels(false);
  EXPECT_EQ(stats().kernels_compiled, before.kernels_compiled) << "a kernel was compiled in the steady state";
  EXPECT_EQ(stats().flushes_unfused, before.flushes_unfused);
  ASSERT_GT(launches, 10 * steps);
  std::printf(
      "[host time] %lld launches a step, %.1f flushes, %.1f ops traced a launch: %.2f us of host time each: "
      "%.2f us tracing, %.2f us planning, %.2f us in the CUDA launcher (%s)\n",
      (long long)(launches / steps), double(stats().flushes - before.flushes) / (10 * steps),
      double(stats().ops_traced - before.ops_traced) / double(stats().kernel_launches - before.kernel_launches),
      best / launches, (best - best_flush) / launches, (best_flush - best_launcher) / launches,
      best_launcher / launches, fake ? "the fake driver's copies subtracted" : "on the GPU");
  EXPECT_LT(best / launches, limit_us);
}

TEST_F(FakeCudaBackend, FusedLaunchesTakeLittleHostTime) { host_time_per_launch(500); }

// On a GPU (scripts/gpu-check.sh): the target, at most 5 us of host time per launch.
TEST(CudaGpu, FusedLaunchesTakeLittleHostTime) {
  if (!cuda_driver::available() || cuda_driver::fake_device())
    GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  host_time_per_launch(5.0);
}

TEST_F(CompilingInTheBackground, RandomProgramsMatchTheInterpreter) {
  const int64_t unfused = stats().kernels_unfused;
  EXPECT_EQ(differential(8, 4, 9300), 0);
  EXPECT_GT(stats().kernels_unfused, unfused);
}

// exit() while kernels compile: each compile in flight finishes (NVRTC and the host compiler
// of the fake driver), the queued ones are dropped, and nothing crashes on the way out.
TEST_F(CompilingInTheBackground, AProcessExitsCleanlyWhileKernelsCompile) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (codegen::cuda::nvrtc_available())
          for (const char* module : {"Add", "Mul", "Exp", "reduce"})
            codegen::cuda::compile_queue().submit(std::string("exit test ") + module, [module] {
              codegen::cuda::nvrtc_compile(codegen::cuda::per_op_source(module), "exit_test.cu", 90, module);
            });
        const torch::Device cuda("cuda:0");
        auto x = torch::randn({3, 4}).to(cuda);
        const float value = ((x * 1.75 - 0.5).sigmoid() * x).sum().item<float>();
        std::fprintf(stderr, "computed %g with %lld compiles pending\n", value,
                     (long long)codegen::cuda::compile_queue().pending());
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      codegen::cuda::nvrtc_available() ? "with [1-9][0-9]* compiles pending" : "compiles pending");
}

// The per-op kernels through NVRTC for sm_90 (each module as kiln compiles one at its first use
// where no prebuilt cubin serves), and the prebuilt library the build made.
TEST(Cuda, PerOpKernelsCompileForSm90) {
  std::string why;
  if (!codegen::cuda::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  for (const char* module : {"Const", "reduce", "Add", "Div", "Where", "Cast", "Lt", "Tanh"}) {
    const auto start = std::chrono::steady_clock::now();
    const auto compiled = codegen::cuda::nvrtc_compile(codegen::cuda::per_op_source(module), "per_op.cu", 90, module);
    std::printf("[per-op] %-7s compiled for sm_90 in %.0f ms (%zu KiB cubin)\n", module,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                compiled.image.size() >> 10);
    EXPECT_FALSE(compiled.ptx_only);
  }
  const std::string library = codegen::cuda::per_op_library_path(90);
  ASSERT_FALSE(library.empty()) << "the build made no " << codegen::cuda::per_op_library_file(90);
  std::ifstream file(library, std::ios::binary);
  char magic[4] = {};
  file.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4),
            "\x7f"
            "ELF")
      << library;
}

// Each elementwise op has the per-op kernels its nodes launch, in every dtype class.
TEST(Cuda, EveryElementwiseNodeHasAPerOpKernel) {
  int checked = 0;
  for (auto t : {kFloat, kDouble, kHalf, kLong, kInt, kBool}) {
    auto input = std::make_shared<ir::Node>();
    input->op = ir::Op::Input;
    input->dtype = t;
    input->shape = {3, 4};
    for (int i = 0; i < ir::kOpCount; ++i) {
      const ir::Op op = ir::all_ops()[i];
      const ir::OpKind kind = ir::op_kind(op);
      const size_t arity = kind == ir::OpKind::Unary ? 1 : kind == ir::OpKind::Select ? 3 : 2;
      if (kind != ir::OpKind::Unary && kind != ir::OpKind::Binary && kind != ir::OpKind::Compare &&
          kind != ir::OpKind::Select)
        continue;
      ir::Node n{};
      n.op = op;
      n.dtype = kind == ir::OpKind::Compare ? kBool : t;
      n.shape = {3, 4};
      for (size_t j = 0; j < arity; ++j) n.inputs.push_back(ir::Operand{input, ir::View{{3, 4}, {4, 1}, 0}});
      codegen::cuda::PerOpLaunch launch;
      ASSERT_TRUE(codegen::cuda::per_op_launch(n, launch)) << ir::op_name(op);
      EXPECT_NE(codegen::cuda::per_op_source(launch.module).find(" " + launch.function + "("), std::string::npos)
          << launch.function;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

// On a GPU (scripts/gpu-check.sh): the per-op kernels against the fused ones on the device, and
// the first MLP step from an empty kernel cache against a warm one (KILN_COMPILE decides whether
// the first waits for NVRTC).
TEST(CudaGpu, PerOpKernelsMatchTheFusedOnesAndServeTheFirstStep) {
  if (!cuda_driver::available() || cuda_driver::fake_device())
    GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  const torch::Device cuda("cuda:0");
  torch::manual_seed(13);
  auto model = torch::nn::Sequential(torch::nn::Linear(784, 512), torch::nn::LayerNorm(std::vector<int64_t>{512}),
                                     torch::nn::ReLU(), torch::nn::Linear(512, 512), torch::nn::ReLU(),
                                     torch::nn::Linear(512, 10));
  model->to(cuda);
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  const auto x = torch::randn({256, 784}).to(cuda), y = torch::randint(0, 10, {256}).to(cuda);
  auto step = [&] {
    const auto start = std::chrono::steady_clock::now();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    adam.zero_grad();
    loss.backward();
    adam.step();
    const float value = loss.item<float>();
    torch::cuda::synchronize();
    return std::pair{value,
                     std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
  };
  reset_stats();
  const auto cold = step();
  const int64_t unfused = stats().kernels_unfused;
  double before_swap = 0;
  int steps = 1;
  for (; codegen::cuda::compile_queue().pending() > 0 && steps < 200; ++steps) before_swap += step().second;
  codegen::cuda::wait_for_background_compiles();
  step();
  const auto warm = step();
  std::printf(
      "[cuda] KILN_COMPILE=%s: first step %.1f ms (%lld kernels per-op), %d more steps %.2f ms each "
      "before every kernel was compiled, warm step %.2f ms (loss %g)\n",
      config().compile_in_background ? "background" : "wait", cold.second, (long long)unfused, steps - 1,
      steps > 1 ? before_swap / (steps - 1) : 0.0, warm.second, double(warm.first));
  EXPECT_TRUE(std::isfinite(warm.first));
  const cuda_driver::DeviceProperties device = cuda_driver::device_properties(0);
  const bool empty = codegen::cuda::kernel_cache(device.major * 10 + device.minor).counts().loaded == 0;
  std::printf("[cuda] the kernel cache was %s\n", empty ? "empty (nothing loaded from disk)" : "warm");
  if (config().compile_in_background && empty) {
    EXPECT_GT(unfused, 0) << "a cold first step ran no per-op kernels";
  }
  // The same values per-op and fused on the device (the dtype classes, as on the fake device).
  config().compile_in_background = true;
  const auto a = torch::randn({64, 33}).to(cuda) * 10, b = torch::randn({33}).to(cuda) * 10 + 0.5;
  for (auto t : {torch::kFloat, torch::kDouble, torch::kHalf, torch::kInt, torch::kLong}) {
    const auto da = a.to(t), db = b.to(t);
    tracer::flush();
    auto values = [&] {
      std::vector<torch::Tensor> out = {torch::where(da > db, da.to(torch::kDouble), db.to(torch::kFloat) - 3), da / db,
                                        (da * db + da).sum(1), da.to(torch::kFloat).amax(0)};
      for (auto& o : out) o = o.cpu();
      return out;
    };
    const auto per_op = values();
    codegen::cuda::wait_for_background_compiles();
    const auto fused = values();
    for (size_t i = 0; i < fused.size(); ++i)
      EXPECT_TRUE(torch::allclose(per_op[i], fused[i], t == torch::kHalf ? 1e-2 : 1e-6, 1e-5, /*equal_nan=*/true))
          << t << " output " << i;
  }
}

}  // namespace
