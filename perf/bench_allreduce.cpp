// all_reduce bandwidth over Gloo, and what DDP's communication adds to a training step. Run one
// rank per process: `build/cli/kiln launch --nproc-per-node 2 -- build/perf/bench_allreduce`
// (alone, it is a job of one rank), or over MPI: `mpirun -np 2 build/perf/bench_allreduce`. Rank 0 prints the tables;
// `--quick` for a short run, `--mlp-only` for the training steps alone, `--comm-hook fp16|bf16` for
// DDP's buckets all-reduced in that dtype (PyTorch's compress hooks).
#include <kiln/distributed.h>
#include <kiln/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

namespace dist = kiln::distributed;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Seconds per `step`, over as many steps as fill `min_seconds` on rank 0 (which tells the others
// the count, so that every rank runs the same collectives and nothing else while timed).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

template <typename F>
double time_steps(F&& step, double min_seconds, double* cpu_per_step = nullptr) {
  for (int i = 0; i < 2; ++i) step();  // warm: connections, kernels
  auto start = Clock::now();
  for (int i = 0; i < 3; ++i) step();
  const double estimate = seconds_since(start) / 3;
  torch::Tensor count = torch::tensor(std::vector<int64_t>{std::max<int64_t>(3, int64_t(min_seconds / estimate))});
  dist::broadcast(count, 0);
  const int64_t steps = count.item<int64_t>();
  dist::barrier();
  start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (int64_t i = 0; i < steps; ++i) step();
  if (cpu_per_step) *cpu_per_step = (cpu_seconds() - cpu_start) / double(steps);
  return seconds_since(start) / double(steps);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, mlp_only = false;
  std::string comm_hook = "none";
  for (int i = 1; i < argc; ++i) {
    quick = quick || std::string(argv[i]) == "--quick";
    mlp_only = mlp_only || std::string(argv[i]) == "--mlp-only";
    if (std::string(argv[i]) == "--comm-hook" && i + 1 < argc) comm_hook = argv[++i];
  }
  if (comm_hook != "none" && comm_hook != "fp16" && comm_hook != "bf16") {
    std::fprintf(stderr, "bench_allreduce: --comm-hook takes none, fp16 or bf16, not '%s'\n", comm_hook.c_str());
    return 2;
  }
  const double min_seconds = quick ? 0.01 : 1.0;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    dist::init_process_group("mpi");  // `mpirun -np 2 build/perf/bench_allreduce`
  } else if (std::getenv("RANK")) {
    dist::init_process_group("gloo");
  } else {
    const auto folder = std::filesystem::temp_directory_path() / ("kiln-bench-allreduce-" + std::to_string(getpid()));
    dist::init_process_group("gloo", "file://" + folder.string(), 1, 0);
  }
  const int rank = dist::get_rank(), world = dist::get_world_size();
  if (rank == 0 && !mlp_only) {
    std::printf("all_reduce (SUM, float32) over %s on %d rank(s), %d kernel thread(s) each\n",
                dist::get_backend().c_str(), world, torch::get_num_threads());
    std::printf("| size | ms | algorithm GB/s | bus GB/s |\n| --- | --- | --- | --- |\n");
  }
  for (int64_t bytes : {int64_t(4) << 10, int64_t(64) << 10, int64_t(1) << 20, int64_t(2) << 20, int64_t(16) << 20,
                        int64_t(64) << 20}) {
    if (mlp_only || (quick && bytes > (int64_t(1) << 20))) break;
    torch::Tensor t = torch::ones({bytes / 4});
    t.data_ptr();  // computed before the clock starts
    const double s = time_steps([&] { dist::all_reduce(t); }, min_seconds);
    // Bus bandwidth as NCCL's tests count it: what each rank sends and receives in a ring.
    const double algorithm = double(bytes) / s / 1e9, bus = algorithm * 2.0 * (world - 1) / world;
    if (rank == 0)
      std::printf("| %lld KiB | %.3f | %.2f | %.2f |\n", (long long)(bytes >> 10), s * 1e3, algorithm, bus);
  }

  // What the per-call check across ranks (shapes compared in one small all-gather) adds to a
  // small all_reduce; DDP's bucket all-reduces skip it.
  if (!mlp_only) {
    auto group = dist::default_process_group();
    torch::Tensor small = torch::ones({16});
    small.data_ptr();
    auto timed = [&](bool check) {
      dist::AllreduceOptions options;
      options.check_across_ranks = check;
      return time_steps(
          [&] {
            std::vector<torch::Tensor> tensors{small};
            group->allreduce(tensors, options)->wait();
          },
          min_seconds);
    };
    const double unchecked = timed(false), checked = timed(true);
    if (rank == 0)
      std::printf("all_reduce of 64 B: %.3f ms checked across ranks, %.3f ms unchecked\n", checked * 1e3,
                  unchecked * 1e3);
  }

  // The MLP of `kiln train` with DDP averaging gradients and, for the cost of that, the same steps
  // inside no_sync() (no communication): on a batch of 64 split over the ranks (as `kiln train
  // --batch-size 64`), and on 64 per rank (as a torch DDP user's per-rank batch). Wall time, and
  // this process's CPU time, which a loaded machine changes less.
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Flatten(), torch::nn::Linear(784, 512), torch::nn::ReLU(),
                            torch::nn::Linear(512, 256), torch::nn::ReLU(), torch::nn::Linear(256, 10));
  auto ddp = kiln::nn::parallel::DistributedDataParallel(mlp);
  namespace hooks = dist::algorithms::ddp_comm_hooks::default_hooks;
  if (comm_hook == "fp16") ddp->register_comm_hook(nullptr, &hooks::fp16_compress_hook);
  if (comm_hook == "bf16") ddp->register_comm_hook(nullptr, &hooks::bf16_compress_hook);
  torch::optim::Adam adam(mlp->parameters(), torch::optim::AdamOptions(1e-3));
  if (rank == 0 && comm_hook != "none")
    std::printf("DDP's buckets all-reduced in %s (%s_compress_hook)\n", comm_hook == "fp16" ? "float16" : "bfloat16",
                comm_hook.c_str());
  if (rank == 0)
    std::printf(
        "| MLP step | ms with DDP | ms without communication | DDP's cost | CPU ms with DDP | CPU ms without "
        "| samples/s (all ranks) |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const int64_t share : {64 / int64_t(world), int64_t(64)}) {
    const torch::Tensor x = torch::randn({share, 1, 28, 28}), y = torch::randint(0, 10, {share});
    auto step = [&] {
      adam.zero_grad();
      torch::nn::functional::cross_entropy(ddp->forward(x), y).backward();
      adam.step();
      kiln::sync();
    };
    double synced_cpu = 0, local_cpu = 0;
    const double synced = time_steps(step, min_seconds * 3, &synced_cpu);
    double local = 0;
    {
      auto guard = ddp->no_sync();
      local = time_steps(step, min_seconds * 3, &local_cpu);
    }
    if (rank == 0)
      std::printf("| %lld per rank x %d | %.2f | %.2f | %+.0f%% | %.2f | %.2f | %.0f |\n", (long long)share, world,
                  synced * 1e3, local * 1e3, (synced / local - 1) * 100, synced_cpu * 1e3, local_cpu * 1e3,
                  double(share * world) / synced);
    if (world == 1) break;
  }
  dist::destroy_process_group();
  return 0;
}
