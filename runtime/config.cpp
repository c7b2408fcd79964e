#include "runtime/config.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace kiln {
namespace {
int cores() {
  static const int n = int(std::thread::hardware_concurrency());  // reads /sys: once
  return n;
}

Config load_from_env() {
  Config c;
  if (const char* v = std::getenv("KILN_LAZY")) c.lazy = std::string(v) != "0";
  if (const char* v = std::getenv("KILN_SEGMENT_CAP")) c.segment_node_cap = std::atoll(v);
  if (const char* v = std::getenv("KILN_BACKEND")) c.backend = v;
  if (const char* v = std::getenv("KILN_LOG")) c.log_level = v;
  if (const char* v = std::getenv("KILN_NUM_THREADS")) c.num_threads = std::atoi(v);
  if (const char* v = std::getenv("KILN_COMPILE")) c.compile_in_background = std::string(v) != "wait";
  if (const char* v = std::getenv("KILN_CUDA_GRAPHS")) c.cuda_graphs = std::string(v) != "0";
  if (const char* v = std::getenv("KILN_REWRITES")) c.rewrite_plans = std::string(v) != "0";
  if (const char* v = std::getenv("KILN_CACHE_DIR"); v && *v)
    c.cache_dir = v;
  else if (const char* home = std::getenv("HOME"); home && *home)
    c.cache_dir = std::string(home) + "/.cache/kiln";
  else
    c.cache_dir = (std::filesystem::temp_directory_path() / "kiln-cache").string();
  if (const char* v = std::getenv("KILN_DUMP")) c.dump_dir = v;
  if (const char* v = std::getenv("KILN_DATA_DIR"); v && *v) c.data_dir = v;
  if (const char* v = std::getenv("KILN_CXX")) c.kernel_linker = v;
  if (const char* v = std::getenv("KILN_HALIDE_COMPILER")) c.halide_compiler = v;
  if (const char* v = std::getenv("KILN_PREBUILT_RUNTIME")) c.prebuilt_halide_runtime = std::string(v) != "0";
  if (const char* v = std::getenv("KILN_DISTRIBUTED_DEBUG")) c.distributed_debug = std::string(v) == "1";
  if (const char* v = std::getenv("KILN_GLOO_RING_MAX_BYTES")) c.gloo_ring_max_bytes = std::atoll(v);
  if (const char* v = std::getenv("KILN_TUNED")) c.use_tuned = std::string(v) != "0";
  if (const char* v = std::getenv("KILN_TUNE_RECORD")) c.tune_record = v;
  if (const char* v = std::getenv("KILN_TUNE_SECONDS")) c.tune_seconds = std::atof(v);
  if (const char* v = std::getenv("KILN_TUNE_JOBS")) c.tune_jobs = std::atoi(v);
  if (const char* v = std::getenv("KILN_SPECIALIZE_AFTER_MS")) c.specialize_after_ms = std::atof(v);
  return c;
}
}  // namespace

Config& config() {
  static Config c = load_from_env();
  return c;
}

void set_lazy(bool lazy) { config().lazy = lazy; }
bool is_lazy() { return config().lazy; }

// Set on one thread, read by the loops of others: kept apart from Config, which tests copy.
std::atomic<int>& num_threads() {
  static std::atomic<int> n{config().num_threads};
  return n;
}
void set_num_threads(int n) { num_threads().store(n); }
int get_num_threads() {
  const int n = num_threads().load(std::memory_order_relaxed);
  return n > 0 ? n : cores();
}

}  // namespace kiln
