// Settings read once from KILN_* environment variables, overridable from code.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

struct Config {
  bool lazy = true;                // KILN_LAZY=0 runs every op at once (the eager baseline)
  int64_t segment_node_cap = 20000;  // KILN_SEGMENT_CAP: a segment this long is flushed
  std::string backend = "halide";  // KILN_BACKEND: halide (compiled, fused) or interp (the reference)
  std::string log_level = "warn";  // KILN_LOG
  int num_threads = 0;             // KILN_NUM_THREADS, 0 = all cores: the start; get/set_num_threads hold the current
  // KILN_COMPILE=background: a kernel that is neither in memory nor on disk is compiled on other
  // threads while the interpreter runs it; a later flush launches it once built. The default
  // (wait) compiles before the flush goes on, so every launch is a compiled kernel.
  bool compile_in_background = false;
  // KILN_THREADS_IMPL: what runs parallel loops, tbb (oneTBB) or pool (kiln's own spinning pool,
  // kept to be measured against it: scripts/bench_threads.sh).
  std::string threads_impl = "tbb";
};
Config& config();

void set_lazy(bool lazy);
bool is_lazy();
void set_num_threads(int n);
int get_num_threads();

}  // namespace kiln
