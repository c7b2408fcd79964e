// CUDA graphs (codegen/cuda/graphs.h) on the fake device of tests/cuda_fake_driver.h, whose graph
// launches run their nodes' kernels in order with the arguments the nodes hold: a training loop's
// steps give the same values with graphs on and off (so every changed argument reached its node),
// a recurring step becomes one graph launch, host reads and GEMMs end a run, and a driver without
// graphs launches kernel by kernel. On a GPU (scripts/gpu-check.sh) the same, and the host's time
// per step with and without graphs.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>

#include "codegen/cuda/graphs.h"
#include "cuda_fake_driver.h"
#include "fake_cuda_test.h"
#include "runtime/config.h"
#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/stats.h"
#include "tracer/storage.h"

namespace {

using namespace kiln;

struct Settings {
  Settings() : saved(config()) { config().compile_in_background = false; }  // every launch fused
  ~Settings() { config() = saved; }
  const Config saved;
};

struct FakeCudaGraphs : FakeCudaBackend {
  Settings settings;
};

bool on_a_gpu() { return cuda_driver::available() && !cuda_driver::fake_device(); }

// What a run of training steps left: each step's loss and the parameters at the end.
struct Trained {
  std::vector<float> losses;
  std::vector<torch::Tensor> parameters;
  void expect_same_as(const Trained& other) const {
    ASSERT_EQ(losses.size(), other.losses.size());
    for (size_t i = 0; i < losses.size(); ++i) EXPECT_EQ(losses[i], other.losses[i]) << "step " << i;
    ASSERT_EQ(parameters.size(), other.parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i)
      EXPECT_TRUE(torch::equal(parameters[i], other.parameters[i])) << "parameter " << i;
  }
};

// A model without matmuls, so that a step's kernels are one run: y = tanh(x * w + b) * v,
// trained towards `target` by `optimizer` ("sgd": with momentum, "adam").
struct Elementwise {
  torch::Tensor w, b, v;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  Elementwise(const torch::Device& device, const std::string& optimizer_name) {
    torch::manual_seed(5);
    const auto on = torch::TensorOptions().device(device);
    w = torch::randn({96}, on).requires_grad_(true);
    b = torch::randn({96}, on).requires_grad_(true);
    v = torch::randn({96}, on).requires_grad_(true);
    if (optimizer_name == "adam")
      optimizer =
          std::make_unique<torch::optim::Adam>(std::vector<torch::Tensor>{w, b, v}, torch::optim::AdamOptions(1e-2));
    else
      optimizer = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{w, b, v},
                                                      torch::optim::SGDOptions(0.05).momentum(0.9));
  }
  torch::Tensor step(const torch::Tensor& x, const torch::Tensor& target) {
    optimizer->zero_grad();
    auto loss = ((x * w + b).tanh() * v - target).pow(2).mean();
    loss.backward();
    optimizer->step();
    tracer::flush();
    return loss;
  }
  std::vector<torch::Tensor> parameters() const { return {w.cpu(), b.cpu(), v.cpu()}; }
};

// `steps` steps of the elementwise model on the batches `batch(i)` gives, the learning rate set
// to `lr(i)` before step i where given.
Trained train_elementwise(const std::string& optimizer, int steps,
                          const std::function<std::pair<torch::Tensor, torch::Tensor>(int)>& batch,
                          const std::function<double(int)>& lr = nullptr) {
  Elementwise model(torch::Device("cuda:0"), optimizer);
  std::vector<torch::Tensor> losses;
  for (int i = 0; i < steps; ++i) {
    if (lr) model.optimizer->param_groups()[0].options().set_lr(lr(i));
    auto [x, target] = batch(i);
    losses.push_back(model.step(x, target));
  }
  Trained t;
  for (auto& l : losses) t.losses.push_back(l.item<float>());
  t.parameters = model.parameters();
  return t;
}

std::pair<torch::Tensor, torch::Tensor> fixed_batch() {
  static const torch::Device cuda("cuda:0");
  torch::manual_seed(9);
  return {torch::randn({16, 96}).to(cuda), torch::randn({16, 96}).to(cuda)};
}

// Each step's count of kernels launched on their own and of graph launches.
struct StepCounts {
  int launches = 0, graph_launches = 0, graph_kernels = 0;
  int64_t kernels = 0;  // Stats::kernel_launches: every kernel, in a graph or not
};

TEST_F(FakeCudaGraphs, ARecurringTrainingStepIsOneGraphLaunchFromItsFourthOn) {
  const auto [x, target] = fixed_batch();
  Elementwise model(torch::Device("cuda:0"), "sgd");
  std::vector<StepCounts> counts;
  for (int i = 0; i < 10; ++i) {
    const kiln_test::FakeCudaCounts before = kiln_test::fake_cuda_counts();
    const int64_t kernels = stats().kernel_launches;
    model.step(x, target);
    const kiln_test::FakeCudaCounts after = kiln_test::fake_cuda_counts();
    counts.push_back({after.launches - before.launches, after.graph_launches - before.graph_launches,
                      after.graph_kernels - before.graph_kernels, stats().kernel_launches - kernels});
  }
  // The first step has a structure of its own (gradients and momentum made); the next
  // kRunsBeforeGraph launch the run that recurs kernel by kernel.
  static_assert(codegen::cuda::kRunsBeforeGraph == 2, "the 4th step is the first graph");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(counts[size_t(i)].graph_launches, 0) << "step " << i + 1;
    EXPECT_GT(counts[size_t(i)].launches, 1) << "step " << i + 1;
  }
  for (size_t i = 3; i < counts.size(); ++i) {
    EXPECT_EQ(counts[i].graph_launches, 1) << "step " << i + 1;
    EXPECT_EQ(counts[i].launches, 0) << "step " << i + 1;
    EXPECT_EQ(counts[i].graph_kernels, counts[2].launches) << "step " << i + 1;
    EXPECT_EQ(counts[i].kernels, counts[2].kernels) << "step " << i + 1;
  }
  std::printf("[graphs] a step: %d kernels, one graph launch from the 4th step on\n", counts[2].launches);
}

TEST_F(FakeCudaGraphs, TrainingGivesTheSameValuesWithGraphsOnAndOff) {
  const auto batch = [](int) { return fixed_batch(); };
  for (const char* optimizer : {"sgd", "adam"}) {
    SCOPED_TRACE(optimizer);
    config().cuda_graphs = false;
    const int64_t graphs_before = stats().cuda_graph_launches;
    const Trained off = train_elementwise(optimizer, 10, batch);
    EXPECT_EQ(stats().cuda_graph_launches, graphs_before) << "KILN_CUDA_GRAPHS=0 launched a graph";
    config().cuda_graphs = true;
    const Trained on = train_elementwise(optimizer, 10, batch);
    EXPECT_GE(stats().cuda_graph_launches - graphs_before, 6);
    on.expect_same_as(off);
    EXPECT_LT(on.losses.back(), on.losses.front());
  }
}

// A batch at other addresses each step, and (`new_lr`) a learning rate changed every step: the
// graph's nodes take them, or the values would differ from the launches'. Without `new_lr`, the
// nodes updated are the pointers' alone.
void changed_arguments_reach_the_graph(const char* optimizer, bool new_lr) {
  SCOPED_TRACE(std::string(optimizer) + (new_lr ? ", a new learning rate each step" : ""));
  const torch::Device cuda("cuda:0");
  torch::manual_seed(11);
  std::vector<torch::Tensor> xs, targets;  // every batch on the device at once: no two share a block
  for (int i = 0; i < 12; ++i)
    xs.push_back(torch::randn({16, 96}).to(cuda)), targets.push_back(torch::randn({16, 96}).to(cuda));
  tracer::flush();
  const auto batch = [&](int i) { return std::make_pair(xs[size_t(i)], targets[size_t(i)]); };
  std::function<double(int)> lr;
  if (new_lr) lr = [](int i) { return 0.02 + 0.01 * i; };
  config().cuda_graphs = false;
  const Trained off = train_elementwise(optimizer, 12, batch, lr);
  config().cuda_graphs = true;
  const Stats before = stats();
  const Trained on = train_elementwise(optimizer, 12, batch, lr);
  EXPECT_GE(stats().cuda_graph_launches - before.cuda_graph_launches, 8);
  EXPECT_GT(stats().cuda_graph_nodes_updated - before.cuda_graph_nodes_updated, 0);
  on.expect_same_as(off);
}

TEST_F(FakeCudaGraphs, ChangedArgumentsReachTheGraph) {
  for (bool new_lr : {false, true}) {
    changed_arguments_reach_the_graph("sgd", new_lr);
    changed_arguments_reach_the_graph("adam", new_lr);
  }
}

// A kernel run on the host (index_put_ accumulating into float16) and reads of values on the host
// in every step: the kernels before each read are on the stream before it, the ones after it
// are a run of their own, whether or not runs are graphs.
TEST_F(FakeCudaGraphs, HostReadsSeeTheKernelsBeforeThem) {
  const torch::Device cuda("cuda:0");
  const auto index = torch::tensor({3, 0, 3, 5}, torch::kLong);
  auto run = [&](const torch::Device& device, bool graphs) {
    config().cuda_graphs = graphs;
    torch::manual_seed(12);
    auto w = torch::randn({4, 6}).to(device);
    const auto where = index.to(device);  // on the device before the steps: no upload in them
    std::vector<float> seen;
    for (int i = 0; i < 8; ++i) {
      auto h = ((w * 1.5).sin() + 0.25 * i).exp();
      auto accumulated = torch::zeros({6, 6}, torch::TensorOptions().dtype(torch::kHalf).device(device));
      accumulated.index_put_({where}, h.to(torch::kHalf), /*accumulate=*/true);
      w = (w + accumulated.narrow(0, 0, 4).to(torch::kFloat).tanh() * 0.1) * (h.mean() * 0.01 + 1);
      seen.push_back((w * w).sum().item<float>());
    }
    seen.push_back(w.cpu().abs().sum().item<float>());
    return seen;
  };
  const std::vector<float> host = run(torch::Device("cpu"), false);
  const int64_t fallbacks = stats().cuda_host_fallbacks;
  const std::vector<float> off = run(cuda, false);
  EXPECT_GE(stats().cuda_host_fallbacks - fallbacks, 8);
  const int64_t graphs = stats().cuda_graph_launches;
  const std::vector<float> on = run(cuda, true);
  EXPECT_GT(stats().cuda_graph_launches, graphs);
  EXPECT_EQ(on, off);
  ASSERT_EQ(on.size(), host.size());
  for (size_t i = 0; i < on.size(); ++i) EXPECT_NEAR(on[i], host[i], 1e-4 * std::abs(host[i])) << i;
}

// Linear layers: each GEMM ends a run, the fused kernels between them are graphs.
TEST_F(FakeCudaGraphs, MatmulsEndARunAndTheKernelsBetweenThemAreGraphs) {
  const torch::Device cuda("cuda:0");
  auto train = [&](bool graphs) {
    config().cuda_graphs = graphs;
    MlpStep step(cuda);
    Trained t;
    for (int i = 0; i < 8; ++i) t.losses.push_back(step().item<float>());
    for (const auto& p : step.model->parameters()) t.parameters.push_back(p.cpu());
    return t;
  };
  const Trained off = train(false);
  const kiln_test::FakeCudaCounts before = kiln_test::fake_cuda_counts();
  const Trained on = train(true);
  const kiln_test::FakeCudaCounts after = kiln_test::fake_cuda_counts();
  on.expect_same_as(off);
  EXPECT_GT(after.gemms - before.gemms, 8 * 4);
  EXPECT_GT(after.graph_launches - before.graph_launches, 0);
  EXPECT_GT(after.graph_kernels - before.graph_kernels, 0);
}

TEST_F(FakeCudaGraphs, ADriverWithoutGraphsLaunchesEachKernel) {
  const auto batch = [](int) { return fixed_batch(); };
  const Trained with = train_elementwise("sgd", 8, batch);
  kiln_test::use_fake_cuda(true, /*graphs=*/false);
  ASSERT_FALSE(cuda_driver::graphs_supported(cuda_driver::api()));
  const kiln_test::FakeCudaCounts before = kiln_test::fake_cuda_counts();
  const Trained without = train_elementwise("sgd", 8, batch);
  EXPECT_EQ(kiln_test::fake_cuda_counts().graph_launches, before.graph_launches);
  EXPECT_GT(kiln_test::fake_cuda_counts().launches - before.launches, 8);
  without.expect_same_as(with);
}

// A launcher holding launches back sets a hook that queues them before device memory goes back
// to the driver (a failed allocation's retry empties the cache), so that no queued kernel names
// freed memory: the device allocator calls the thread's hook first.
TEST_F(FakeCudaGraphs, DeviceMemoryGoesBackToTheDriverAfterTheThreadsHook) {
  struct Seen {
    int calls = 0;
  } seen;
  {
    auto t = torch::ones({1 << 20}, torch::TensorOptions().device(torch::Device("cuda:0"))) * 2;
    EXPECT_EQ(t.sum().item<float>(), float(2 << 20));
  }
  cuda_driver::set_before_free([](void* s) { ++static_cast<Seen*>(s)->calls; }, &seen);
  kiln::cuda::empty_cache();
  cuda_driver::set_before_free(nullptr, nullptr);
  EXPECT_GT(seen.calls, 0);
  const int calls = seen.calls;
  {
    auto t = torch::ones({1 << 20}, torch::TensorOptions().device(torch::Device("cuda:0"))) * 3;
    EXPECT_EQ(t.sum().item<float>(), float(3 << 20));
  }
  kiln::cuda::empty_cache();  // the hook unset: not called
  EXPECT_EQ(seen.calls, calls);
}

// The host's time per training step with graphs and without, the fastest of interleaved rounds
// (the machine may be loaded): on the fake device with its driver running no kernels, less its
// copies; on a GPU not waiting for it. Returns {with, without} in microseconds.
template <typename Step>
std::pair<double, double> host_time_per_step(Step step, int steps) {
  const bool fake = cuda_driver::fake_device();
  for (int i = 0; i < 6; ++i) step();  // every kernel loaded, the runs' graphs made
  if (fake) kiln_test::fake_cuda_skip_kernels(true);
  double best[2] = {1e30, 1e30};
  for (int round = 0; round < 20; ++round) {
    const bool graphs = round % 2 == 0;
    config().cuda_graphs = graphs;
    if (!fake) torch::cuda::synchronize();
    const long long device_ns = kiln_test::fake_cuda_counts().device_ns;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() -
                      double(kiln_test::fake_cuda_counts().device_ns - device_ns) / 1000;
    best[graphs ? 0 : 1] = std::min(best[graphs ? 0 : 1], us / steps);
  }
  if (fake) kiln_test::fake_cuda_skip_kernels(false);
  config().cuda_graphs = true;
  return {best[0], best[1]};
}

// Runs `step` until its runs are graphs, counts one step's launches, times steps with graphs on
// and off, and prints a [graphs] line. `limit` (on a GPU): the most that a step with graphs may
// take, as a share of one without. Returns the counted step's graph launches.
template <typename Step>
int64_t report_graph_step(const char* what, Step step, int steps, std::optional<double> limit) {
  for (int i = 0; i < 4; ++i) step();
  const Stats before = stats();
  step();
  const Stats after = stats();
  const auto [with, without] = host_time_per_step(step, steps);
  std::printf(
      "[graphs] %s, %lld kernels and GEMMs in %lld graph launches (%lld nodes updated): %.1f us of host time with "
      "graphs, %.1f us without (%s)\n",
      what, (long long)(after.kernel_launches - before.kernel_launches),
      (long long)(after.cuda_graph_launches - before.cuda_graph_launches),
      (long long)(after.cuda_graph_nodes_updated - before.cuda_graph_nodes_updated), with, without,
      on_a_gpu() ? "on the GPU" : "fake driver, kernels not run");
  if (limit) {
    EXPECT_LT(with, without * *limit);
  }
  return int64_t(after.cuda_graph_launches - before.cuda_graph_launches);
}

// Both workloads: the elementwise model (a step is one run) and the MLP of
// CudaGpu.FusedLaunchesTakeLittleHostTime (GEMMs between runs), each replayed as graphs.
void graphs_host_time(std::optional<double> limit) {
  const torch::Device cuda("cuda:0");
  const char* steps_env = std::getenv("KILN_HOST_TIME_STEPS");
  const int steps = steps_env ? std::atoi(steps_env) : 40;
  {
    const auto [x, target] = fixed_batch();
    Elementwise model(cuda, "adam");
    EXPECT_EQ(report_graph_step(
                  "elementwise Adam step", [&] { model.step(x, target); }, steps, limit),
              1);
  }
  MlpStep step(cuda);
  EXPECT_GE(report_graph_step(
                "MLP Adam step", [&] { step(); }, steps, limit),
            1);
}

// The fake driver's launch is a counter, so graphs save it little; what their bookkeeping costs is
// printed (perf/RESULTS.md), not checked: a timing on a shared CI machine is no test.
TEST_F(FakeCudaGraphs, HostTimePerStepWithAndWithoutGraphs) { graphs_host_time(std::nullopt); }

// On a GPU (scripts/gpu-check.sh), where a launch is the driver's work: graphs take less.
TEST(CudaGpu, GraphsTakeLessHostTimePerStep) {
  if (!on_a_gpu()) GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  Settings settings;
  graphs_host_time(1.0);
}

TEST(CudaGpu, ChangedArgumentsReachTheGraph) {
  if (!on_a_gpu()) GTEST_SKIP() << "no CUDA device: " << cuda_driver::unavailable_reason();
  Settings settings;
  changed_arguments_reach_the_graph("adam", true);
}

}  // namespace
