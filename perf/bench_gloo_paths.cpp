// kiln's Gloo all-reduce paths side by side in one job, in interleaved rounds: the algorithm
// classes (what a call gets by default) against Gloo's options API (what a call with a timeout of
// its own gets), float32 SUM, at the sizes given. Run one rank per process:
//   build/cli/kiln launch --nproc-per-node 3 -- build/perf/bench_gloo_paths [--sizes 4K,64K,1M,16M]
//     [--rounds 3] [--max-seconds 2] [--paths classes,options] [--dtype float32|int64] [--check 0|1]
// (--check 1: each call first compares the ranks' calls, as kiln's collectives do by default).
// A size takes about --max-seconds of calls per path and round (at least one call, counted from a
// first one); a path whose call took more than 10 times that is dropped for the larger sizes.
// Rank 0 prints ms per call (and the calls timed), one row per round.
#include <kiln/distributed.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace dist = kiln::distributed;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

int64_t parse_bytes(const std::string& text) {
  const char unit = text.empty() ? 0 : text.back();
  const int64_t n = std::atoll(text.c_str());
  return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sizes = {"4K", "64K", "1M", "16M"}, paths = {"classes", "options"};
  int rounds = 3;
  double max_seconds = 2;
  std::string dtype_name = "float32";
  bool check = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes")
      sizes = split(value);
    else if (flag == "--rounds")
      rounds = std::atoi(value.c_str());
    else if (flag == "--max-seconds")
      max_seconds = std::atof(value.c_str());
    else if (flag == "--paths")
      paths = split(value);
    else if (flag == "--dtype")
      dtype_name = value;
    else if (flag == "--check")
      check = value == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const kiln::ScalarType dtype = dtype_name == "int64" ? kiln::kLong : kiln::kFloat;
  dist::init_process_group("gloo");
  const int rank = dist::get_rank(), world = dist::get_world_size();
  auto group = dist::default_process_group();
  if (rank == 0)
    std::printf("all_reduce (SUM, %s) over gloo on %d ranks, ms per call, %d rounds\n| size | %s |\n",
                dtype_name.c_str(), world, rounds,
                [&] {
                  std::string header;
                  for (const auto& p : paths) header += (header.empty() ? "" : " | ") + p;
                  return header;
                }()
                    .c_str());
  std::vector<bool> dropped(paths.size(), false);
  for (const std::string& size : sizes) {
    const int64_t bytes = parse_bytes(size);
    kiln::Tensor t = kiln::ones({bytes / int64_t(kiln::element_size(dtype))}, kiln::TensorOptions(dtype));
    t.data_ptr();
    for (int round = 0; round < rounds; ++round) {
      std::string row = "| " + size + " |";
      for (size_t p = 0; p < paths.size(); ++p) {
        if (dropped[p]) {
          row += " - |";
          continue;
        }
        dist::AllreduceOptions options;
        options.check_across_ranks = check;
        if (paths[p] == "options") options.timeout = std::chrono::minutes(10);  // not the group's
        std::vector<kiln::Tensor> tensors{t};
        // Warm (the instance, the connections), then as many calls as fill --max-seconds by
        // rank 0's estimate, which every rank takes, so that all make the same calls.
        auto warm = Clock::now();
        group->allreduce(tensors, options)->wait();
        const double estimate = std::chrono::duration<double>(Clock::now() - warm).count();
        kiln::Tensor count = kiln::full({1}, std::min(1000.0, std::max(1.0, std::floor(max_seconds / estimate))));
        dist::broadcast(count, 0);
        const int64_t calls = int64_t(count.item<double>());
        dist::barrier();
        const auto start = Clock::now();
        for (int64_t i = 0; i < calls; ++i) group->allreduce(tensors, options)->wait();
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / double(calls);
        if (seconds > 10 * max_seconds) dropped[p] = true;
        char cell[64];
        std::snprintf(cell, sizeof cell, " %.3f (%lld) |", seconds * 1e3, (long long)calls);
        row += cell;
      }
      if (rank == 0) {
        std::printf("%s\n", row.c_str());
        std::fflush(stdout);
      }
    }
  }
  dist::destroy_process_group();
  return 0;
}
