// A long training run in one process: the MLP of the step benchmarks (784-512-512-10 with
// LayerNorm, GELU, Adam, batch 256) for N steps, printing every N/10 steps the resident memory,
// the partitions made and the kernels compiled or loaded so far, so that growth shows. With
// `--no-read` the loop never reads a value (kiln then flushes when a segment reaches
// KILN_SEGMENT_CAP nodes); by default it reads the loss every step, as a training loop's logging
// does. Usage: long_run [steps=10000] [--no-read]. Not a test: perf/RESULTS.md has its figures.
#include <kiln/torch.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "fusion/partition_cache.h"
#include "perf/bench_mlp.h"

namespace {

double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 10000;
  bool read = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-read") == 0)
      read = false;
    else
      steps = std::atoi(argv[i]);
  }
  torch::manual_seed(0);
  BenchMlp net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto x = torch::randn({256, 784});
  auto y = torch::randint(0, 10, {256});
  torch::Tensor loss;
  for (int i = 1; i <= steps; ++i) {
    adam.zero_grad();
    loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    adam.step();
    if (read) loss.item<float>();
    if (i % std::max(1, steps / 10) == 0 || i == 1) {
      if (!read) kiln::sync();  // what the step count says, computed, before memory is read
      const auto st = kiln::stats();
      std::printf("step %d rss_mib %.1f partitions_made %lld kernels_compiled_or_loaded %lld flushes %lld\n", i,
                  resident_mib(), (long long)kiln::fusion::partition_cache_counts().made,
                  (long long)(st.kernels_compiled + st.kernels_loaded), (long long)st.flushes);
      std::fflush(stdout);
    }
  }
  std::printf("final_loss %.6f\n", loss.item<float>());
}
