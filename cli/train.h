// `kiln train`: trains the MLP or the CNN of cli/models.h on Fashion-MNIST (data-parallel across
// processes with --nproc-per-node), with a progress bar per epoch and the test accuracy after
// each; the last line printed is
// `accuracy <test accuracy> seconds_per_epoch <seconds>`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::cli {

struct TrainOptions {
  std::string model = "mlp";  // mlp | cnn
  int epochs = 2;
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";  // adam | adamw | sgd | rmsprop
  int threads = 0;                 // 0: kiln's default (KILN_NUM_THREADS or all cores)
  std::string save;                // safetensors path for the trained weights, if given
  uint64_t seed = 0;
  std::string data_dir;        // default: kiln::data::fashion_mnist_dir()
  std::string device = "cpu";  // where the model and batches live: cpu, cuda or cuda:N
  // Above 1, `kiln train` starts this many ranks of itself (cli/launch.h, with `command_line`), each
  // training a DistributedDataParallel copy on its share of every batch. A rank is a process
  // started with WORLD_SIZE set, by this or by `kiln launch`.
  int nproc_per_node = 1;
  // auto: nccl on GPUs, mpi in a job mpirun started, else gloo. With mpi, --nproc-per-node starts
  // the ranks through mpirun (Open MPI moves the gradients through shared memory, Gloo through TCP).
  std::string backend = "auto";
  // none | fp16 | bf16: DDP's gradient buckets all-reduced in float16 or bfloat16 (PyTorch's
  // fp16_compress_hook and bf16_compress_hook), half the bytes of float32.
  std::string comm_hook = "none";
  std::vector<std::string> command_line;
};

// Returns the process exit status.
int train(const TrainOptions& options);

}  // namespace kiln::cli
