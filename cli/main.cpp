// The kiln command: `kiln train` (Fashion-MNIST), `kiln bench` (side by side with libtorch),
// `kiln tune`, `kiln launch` (the ranks of a data-parallel job), `kiln info` (version, backends,
// cache) and `kiln cache clear`. Argument errors are reported by
// CLI11 with exit status 105/106 (see --help).
#include <kiln/kiln.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/bench.h"
#include "cli/launch.h"
#include "cli/train.h"
#include "cli/tune.h"
#include "codegen/cuda/nvrtc.h"
#include "codegen/halide/compiler.h"
#include "runtime/config.h"
#include "runtime/cuda/driver.h"
#include "runtime/disk_cache.h"
#include "runtime/version.h"

namespace {

// The GPUs the CUDA driver counts, or why there are none.
void print_cuda_devices() {
  namespace driver = kiln::cuda_driver;
  if (!driver::available()) {
    std::printf("  cuda     no GPU: %s\n", driver::unavailable_reason().c_str());
    return;
  }
  try {
    std::printf("  cuda     driver for CUDA %s, %d device(s); tensors on it run kiln's CUDA kernels\n",
                driver::driver_version().c_str(), driver::device_count());
    for (int i = 0; i < driver::device_count(); ++i) {
      const driver::DeviceProperties p = driver::device_properties(i);
      std::printf("    cuda:%d  %s, compute capability %d.%d (sm_%d%d), %d SMs, %.1f GiB\n", i, p.name.c_str(), p.major,
                  p.minor, p.major, p.minor, p.multiprocessors, double(p.total_memory) / double(1 << 30));
    }
    std::printf("           CUDA graphs %s\n", !driver::graphs_supported(driver::api()) ? "off: the driver lacks them"
                                               : kiln::config().cuda_graphs
                                                   ? "on: a recurring run of kernels is one graph launch"
                                                   : "off (KILN_CUDA_GRAPHS=0)");
  } catch (const kiln::Error& e) {
    std::printf("  cuda     the driver failed: %s\n", e.what());
  }
}

void print_info() {
  std::printf("kiln %s\n", kiln::version());
  std::printf("backends:\n");
  std::printf("  interp   reference interpreter (KILN_BACKEND=interp)\n");
  try {
    std::printf("  halide   CPU, target %s (default)\n", kiln::codegen::halide::compiler_target().c_str());
  } catch (const kiln::Error& e) {
    std::printf("  halide   CPU (default), but no kernel can be compiled: %s\n", e.what());
  }
  print_cuda_devices();
  std::printf("           %s\n", kiln::codegen::cuda::nvrtc_summary().c_str());
  std::printf("threads: %d\n", kiln::get_num_threads());
  std::printf("cache: %s (%.1f MiB)\n", kiln::cache_root().c_str(), double(kiln::cache_size_bytes()) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: lazy, fused, compiled training with libtorch's API"};
  app.require_subcommand(1);

  kiln::cli::TrainOptions train;
  CLI::App* train_cmd = app.add_subcommand("train", "Train a model on Fashion-MNIST");
  train_cmd->add_option("--model", train.model, "mlp or cnn")
      ->check(CLI::IsMember({"mlp", "cnn"}))
      ->capture_default_str();
  train_cmd->add_option("--epochs", train.epochs, "Passes over the training set")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  train_cmd->add_option("--batch-size", train.batch_size, "Samples per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train_cmd->add_option("--lr", train.lr, "Learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  train_cmd->add_option("--optimizer", train.optimizer, "adam, adamw, sgd (momentum 0.9) or rmsprop")
      ->check(CLI::IsMember({"adam", "adamw", "sgd", "rmsprop"}))
      ->capture_default_str();
  train_cmd->add_option("--threads", train.threads, "Threads for kernels (0: KILN_NUM_THREADS or all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  train_cmd->add_option("--device", train.device, "cpu, cuda or cuda:N")->capture_default_str();
  train_cmd->add_option("--save", train.save, "Write the trained weights to this safetensors file");
  train_cmd->add_option("--seed", train.seed, "Seed for initialization and shuffling")->capture_default_str();
  train_cmd->add_option("--data", train.data_dir,
                        "Folder with the Fashion-MNIST IDX files (default: KILN_DATA_DIR or "
                        "/usr/share/datasets/fashion-mnist)");
  train_cmd
      ->add_option("--nproc-per-node", train.nproc_per_node,
                   "Ranks to train data-parallel on this machine (each on its share of every batch)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train_cmd
      ->add_option("--backend", train.backend,
                   "Collectives between ranks: gloo (TCP), mpi (Open MPI's shared memory; ranks started by mpirun) "
                   "or nccl (GPUs); auto: nccl on GPUs, mpi under mpirun, else gloo")
      ->check(CLI::IsMember({"auto", "gloo", "mpi", "nccl"}))
      ->capture_default_str();
  train_cmd
      ->add_option("--comm-hook", train.comm_hook,
                   "With several ranks: none, or fp16 / bf16 to all-reduce the gradients in float16 / bfloat16 "
                   "(PyTorch's fp16_compress_hook / bf16_compress_hook: half the bytes)")
      ->check(CLI::IsMember({"none", "fp16", "bf16"}))
      ->capture_default_str();
  train.command_line.assign(argv, argv + argc);

  kiln::cli::BenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time the workloads of perf/workloads.cpp against libtorch");
  bench_cmd->add_option("--min-time", bench.min_time, "Seconds per workload and side")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd
      ->add_option("--repetitions", bench.repetitions, "Rounds, the sides taking turns; more than 1 reports medians")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd->add_option("--filter", bench.filter, "Regular expression over workload names (default: all)");
  bench_cmd->add_option("--json", bench.json, "Write the table and every run to this file");
  bench_cmd->add_option("--plot", bench.plot, "Write a bar chart of the speed-ups to this SVG file");
  auto* libtorch_opt =
      bench_cmd
          ->add_option("--libtorch", bench.libtorch,
                       "perf/bench_workloads_libtorch to run (default: the one of this build, if built)")
          ->check(CLI::ExistingFile);
  bench_cmd->add_flag("--no-libtorch", bench.no_libtorch, "Leave the libtorch column empty")->excludes(libtorch_opt);
  bench_cmd->add_flag("--no-eager", bench.no_eager, "Skip kiln's eager column");
  bench_cmd->add_option("--device", bench.device, "Where the workloads run: cpu, cuda or cuda:N")
      ->capture_default_str();
  bench_cmd->add_option("--threads", bench.threads, "Threads of every side (0: each at 1 and 2, the best kept)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  kiln::cli::LaunchOptions launch;
  CLI::App* launch_cmd = app.add_subcommand(
      "launch", "Start the ranks of a data-parallel job: kiln launch --nproc-per-node N -- PROGRAM ARGS");
  launch_cmd->add_option("--nproc-per-node", launch.nproc_per_node, "Ranks on this machine")
      ->required()
      ->check(CLI::PositiveNumber);
  launch_cmd->add_option("--nnodes", launch.nnodes, "Machines in the job")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  launch_cmd->add_option("--node-rank", launch.node_rank, "This machine's place among them")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  launch_cmd->add_option("--master-addr", launch.master_addr, "Address of node 0, where rank 0 serves the rendezvous")
      ->capture_default_str();
  launch_cmd->add_option("--master-port", launch.master_port, "Its port")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  launch_cmd->add_option("command", launch.command, "PROGRAM ARGS (after --)")->required();
  bench_cmd->add_flag("--tuned", bench.tuned,
                      "Add a column: kiln lazy with the tuning database's schedules (kiln lazy itself ignores them)");

  kiln::cli::TuneOptions tune;
  CLI::App* tune_cmd = app.add_subcommand("tune", "Search faster kernel schedules for a workload or a program");
  tune_cmd->add_option("--workload", tune.workloads, "A `kiln bench` workload (repeatable)");
  tune_cmd->add_flag("--all", tune.all, "Every `kiln bench` workload");
  tune_cmd->add_option("--budget", tune.budget, "Seconds in all")->check(CLI::PositiveNumber)->capture_default_str();
  tune_cmd->add_option("--jobs", tune.jobs, "Candidates compiling at once (0: the cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  tune_cmd->add_flag("--report", tune.report, "Print the tuning database (after tuning, if asked to tune)");
  tune_cmd->add_option("--compile-limit", tune.compile_limit, "Seconds a candidate may compile (then it is abandoned)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tune_cmd->add_option("--run-limit", tune.run_limit, "Seconds a candidate's first run may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tune_cmd
      ->add_option("--below-us", tune.below_us,
                   "Microseconds under which a kernel is left as it is (a launch's own time)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  tune_cmd->add_option("program", tune.program, "-- PROGRAM ARGS: a program to run, record and tune");

  CLI::App* info_cmd = app.add_subcommand("info", "Version, backends and the kernel cache");
  CLI::App* cache_cmd = app.add_subcommand("cache", "Manage the kernel cache");
  cache_cmd->require_subcommand(1);
  CLI::App* clear_cmd = cache_cmd->add_subcommand("clear", "Delete every cached kernel");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train_cmd) return kiln::cli::train(train);
    if (*bench_cmd) return kiln::cli::bench(bench);
    if (*launch_cmd) return kiln::cli::launch(launch);
    if (*tune_cmd) return kiln::cli::tune(tune);
    if (*info_cmd) print_info();
    if (*clear_cmd) {
      const double mib = double(kiln::cache_size_bytes()) / (1 << 20);
      kiln::clear_cache();
      std::printf("cleared %s (%.1f MiB)\n", kiln::cache_root().c_str(), mib);
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln: %s\n", e.what());
    return 1;
  }
  return 0;
}
