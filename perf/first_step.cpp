// Time to the first training step of an MLP (784-512-512-10, GELU, LayerNorm, Adam, batch 256),
// from process start: run it with an empty KILN_CACHE_DIR (everything compiles) and again with
// the same folder (everything loads). Prints `first_step_seconds <s> kernels_compiled <n>
// kernels_loaded <n>`, then the same for a second step (the steady state). `first_step N` times
// N steps (`step_<i>_seconds`), to see when background compilation (the default) has built
// everything: until then kernels run unfused (`kernels_unfused`).
#include <kiln/torch.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include "perf/bench_mlp.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  torch::manual_seed(0);
  BenchMlp net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
  auto step = [&] {
    auto x = torch::randn({256, 784});
    auto y = torch::randint(0, 10, {256});
    adam.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    adam.step();
    return loss.item<float>();
  };
  for (int i = 0; i < steps; ++i) {
    const auto t0 = i == 0 ? start : clock::now();
    kiln::reset_stats();
    step();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    const auto st = kiln::stats();
    const std::string which = i == 0                 ? "first_step"
                              : i == 1 && steps == 2 ? "second_step"
                                                     : "step_" + std::to_string(i);
    std::cout << which << "_seconds " << s << " kernels_compiled " << st.kernels_compiled << " kernels_loaded "
              << st.kernels_loaded << " kernel_launches " << st.kernel_launches << " kernels_unfused "
              << st.kernels_unfused << std::endl;
  }
  std::cout << "total_seconds " << std::chrono::duration<double>(clock::now() - start).count() << std::endl;
}
