// `kiln bench`: the side-by-side table of perf/workloads.cpp. The kiln side (lazy, and eager with
// every op run at once) runs in this process; the libtorch side by spawning
// perf/bench_workloads_libtorch at 1 and 2 threads, when it was built (libtorch-dev installed).
// The machine's limits (triad bandwidth, sgemm rate) are measured in the same run and give each
// workload's floor. Prints a table; --json writes it for machines, --plot as an SVG bar chart.
#pragma once
#include <string>

namespace kiln::cli {

struct BenchOptions {
  double min_time = 0.5;  // seconds per workload and side (Google Benchmark's --benchmark_min_time)
  int repetitions = 1;    // > 1: each figure is the median of this many runs
  std::string filter;     // regular expression over workload names; empty: all
  std::string json;       // write the table and every run here
  std::string plot;       // write an SVG bar chart here
  std::string libtorch;   // bench_workloads_libtorch; empty: look beside this program's build
  bool no_libtorch = false;
  bool no_eager = false;
  int threads = 0;  // threads of every side; 0: each side at 1 and at 2 threads, its best kept
  // A "kiln tuned" side (the tuning database's schedules); kiln lazy then runs the hand ones.
  bool tuned = false;
  // Where the workloads' tensors live: "cpu", "cuda" or "cuda:N" (BENCH_DEVICE of
  // perf/bench_common.h). On a CUDA device the limit is the device's copy bandwidth, and the
  // libtorch column stays empty (Debian's libtorch has no CUDA).
  std::string device = "cpu";
};

// Returns the process exit status: 1 when the sides disagree on a workload's check value or a
// timed loop compiled kernels.
int bench(const BenchOptions& options);

}  // namespace kiln::cli
