// Settings read once from KILN_* environment variables (here only), overridable from code: a
// setting is read where it is used, so a test may change it at run time.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

struct Config {
  bool lazy = true;                  // KILN_LAZY=0 runs every op at once (the eager baseline)
  int64_t segment_node_cap = 20000;  // KILN_SEGMENT_CAP: a segment this long is flushed
  std::string backend = "halide";    // KILN_BACKEND: halide (compiled, fused), interp (the reference) or
                                     // unfused (per-op kernels only: codegen/unfused.h)
  std::string log_level = "warn";    // KILN_LOG
  int num_threads = 0;               // KILN_NUM_THREADS, 0 = all cores: the start; get/set_num_threads hold the current
  // KILN_COMPILE: background (the default) compiles a kernel that is neither in memory nor on disk
  // on other threads while the flush runs it unfused on the per-op kernels compiled with kiln
  // (codegen/unfused.h); a later flush launches it once built. wait compiles before the flush
  // goes on, so every launch is a fused kernel (benchmarks and tests that count them).
  bool compile_in_background = true;
  // KILN_CUDA_GRAPHS=0: every CUDA kernel is its own launch. Otherwise a run of fused kernels that
  // recurs (the same launches in the same order, flush after flush) is replayed as one CUDA graph,
  // its nodes' arguments updated where they changed (codegen/cuda/graphs.h).
  bool cuda_graphs = true;
  // KILN_REWRITES=0: flushes skip CSE and simplification and partition the plan as traced. The
  // differential tests' reference (the interpreter) runs so, to check those passes too.
  bool rewrite_plans = true;
  // Paths and tools.
  std::string cache_dir;  // KILN_CACHE_DIR, else $HOME/.cache/kiln, else kiln-cache in the temporary folder
  std::string dump_dir;   // KILN_DUMP: a folder for each new kernel's lowered Halide statement or CUDA source
  std::string data_dir = "/usr/share/datasets/fashion-mnist";  // KILN_DATA_DIR: Fashion-MNIST's IDX files
  std::string kernel_linker;  // KILN_CXX: a C++ driver to link kernels with (empty: ld itself)
  // KILN_HALIDE_COMPILER: the compiler module's path (empty: the build tree's, else the installed one).
  std::string halide_compiler;
  // KILN_PREBUILT_RUNTIME=0: ignore the Halide runtime built with kiln, build one into the cache.
  bool prebuilt_halide_runtime = true;
  // KILN_DISTRIBUTED_DEBUG=1: the ranks compare each collective's name, shape and dtype before
  // running it even where the caller verified its layout once (DDP's buckets); others always do.
  bool distributed_debug = false;
  // KILN_GLOO_RING_MAX_BYTES: Gloo all-reduces up to this size run its ring algorithm class (past
  // two ranks, of integers only), others halving-doubling (0: kiln's choice for the job's size).
  // Must be the same on every rank.
  int64_t gloo_ring_max_bytes = 0;
  // Tuning (`kiln tune`, codegen/halide/tune.h). KILN_TUNED=0: flushes ignore the tuning database
  // and run every kernel with its hand schedule.
  bool use_tuned = true;
  // KILN_TUNE_RECORD: a file where each kernel launched is listed once with its size bucket.
  std::string tune_record;
  // KILN_TUNE_SECONDS: above 0, each kernel not yet in the tuning database is tuned before its
  // first launch, for about this long; KILN_TUNE_JOBS candidates compile at once (0: the cores).
  double tune_seconds = 0;
  int tune_jobs = 0;
  // KILN_SPECIALIZE_AFTER_MS: a kernel at sizes that would specialize it, served by the general
  // kernel, has its specialized one compiled in the background once the general one has run this
  // long at those sizes (about a compile's cost), unless the tuning database decides
  // (codegen/halide/specialize.h).
  double specialize_after_ms = 1000;
};
Config& config();

void set_lazy(bool lazy);
bool is_lazy();
void set_num_threads(int n);
int get_num_threads();

}  // namespace kiln
