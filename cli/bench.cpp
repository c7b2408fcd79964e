#include "cli/bench.h"

#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "cli/bar_chart.h"
#include "codegen/halide/compiler.h"
#include "runtime/cuda/driver.h"

namespace kiln::cli {

namespace {

using json = nlohmann::json;

// One workload's figures on one side: milliseconds per iteration and its counters (bytes, flops,
// check, launches, compiled, bytes_per_second, GFLOPS).
struct Measurement {
  double ms = 0;
  std::map<std::string, double> counters;
  std::optional<double> counter(const std::string& name) const {
    auto it = counters.find(name);
    return it == counters.end() ? std::nullopt : std::optional<double>(it->second);
  }
};
using Side = std::map<std::string, Measurement>;  // by workload name

// "BM_AdamStep/real_time" -> "AdamStep".
std::string workload_name(std::string run_name) {
  run_name = run_name.substr(0, run_name.find('/'));
  return run_name.rfind("BM_", 0) == 0 ? run_name.substr(3) : run_name;
}

bool is_limit(const std::string& name) { return name.rfind("Triad", 0) == 0; }

// Receives this process's runs from Google Benchmark: the kiln side.
class Collector : public benchmark::BenchmarkReporter {
 public:
  Collector(std::string side, std::vector<std::string>& order) : side_(std::move(side)), order_(order) {}
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const std::string name = workload_name(run.run_name.str());
      if (run.error_occurred) throw Error("bench: " + name + " (" + side_ + ") failed: " + run.error_message);
      if (run.run_type != Run::RT_Iteration) continue;
      Measurement m{run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit) * 1e3, {}};
      for (const auto& [key, counter] : run.counters) m.counters[key] = counter.value;
      std::fprintf(stderr, "  %-12s %-20s %10.4g ms\n", side_.c_str(), name.c_str(), m.ms);
      if (std::find(order_.begin(), order_.end(), name) == order_.end()) order_.push_back(name);
      results[name] = m;
    }
  }
  Side results;

 private:
  std::string side_;
  std::vector<std::string>& order_;
};

// Google Benchmark reads its settings from flags; they are set once per process.
void set_benchmark_flags(const BenchOptions& o) {
  std::vector<std::string> args = {"kiln bench", "--benchmark_min_time=" + std::to_string(o.min_time)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = int(argv.size());
  benchmark::Initialize(&argc, argv.data());
}

Side run_kiln(const BenchOptions& o, const std::string& kind, int threads, std::vector<std::string>& order) {
  const bool lazy = kind != "kiln eager";
  const std::string side = kind + " " + std::to_string(threads) + "t";
  std::fprintf(stderr, "running %s in this process\n", side.c_str());
  Collector collector(side, order);
  set_lazy(lazy);
  // Rows time warm fused kernels: each is compiled before it first runs.
  const bool background = config().compile_in_background;
  config().compile_in_background = false;
  benchmark::RunSpecifiedBenchmarks(&collector, o.filter.empty() ? "." : o.filter);
  config().compile_in_background = background;
  set_lazy(true);
  return collector.results;
}

// Runs `args` with BENCH_THREADS=`threads` and returns what it printed on stdout. Everything the
// child needs is built before fork: this process has threads (those of kiln's parallel loops), so the child may
// only call async-signal-safe functions until it execs.
std::string run_program(const std::vector<std::string>& args, int threads) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string threads_var = "BENCH_THREADS=" + std::to_string(threads);
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "BENCH_THREADS=", 14) != 0) envp.push_back(*e);
  envp.push_back(const_cast<char*>(threads_var.c_str()));
  envp.push_back(nullptr);

  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw Error("bench: pipe failed");
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw Error("bench: fork failed");
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0)
      out.append(buffer, size_t(n));
    else if (errno != EINTR)
      break;
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("bench: " + args[0] + " failed (status " + std::to_string(WEXITSTATUS(status)) + ")");
  return out;
}

Side run_libtorch(const BenchOptions& o, const std::string& program, int threads) {
  std::fprintf(stderr, "running libtorch at %d thread%s: %s\n", threads, threads > 1 ? "s" : "", program.c_str());
  std::vector<std::string> args = {
      program,
      "--benchmark_format=json",
      "--benchmark_min_time=" + std::to_string(o.min_time),
  };
  if (!o.filter.empty()) args.push_back("--benchmark_filter=" + o.filter);
  const json report = json::parse(run_program(args, threads));
  Side side;
  for (const json& b : report["benchmarks"]) {
    const std::string name = workload_name(b.value("run_name", b["name"].get<std::string>()));
    const double per_second = b["time_unit"] == "ns"   ? 1e9
                              : b["time_unit"] == "us" ? 1e6
                              : b["time_unit"] == "ms" ? 1e3
                                                       : 1;
    Measurement m{b["real_time"].get<double>() / per_second * 1e3, {}};
    for (const auto& [key, value] : b.items())
      if (value.is_number() && key != "real_time" && key != "cpu_time") m.counters[key] = value.get<double>();
    std::fprintf(stderr, "  %-12s %-20s %10.4g ms\n", ("libtorch " + std::to_string(threads) + "t").c_str(),
                 name.c_str(), m.ms);
    side[name] = m;
  }
  return side;
}

// perf/bench_workloads_libtorch of the build tree this program belongs to (build/cli/kiln), if any.
std::string find_libtorch_program() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const auto& candidate : {self.parent_path() / ".." / "perf" / "bench_workloads_libtorch",
                                self.parent_path() / "bench_workloads_libtorch"})
    if (std::filesystem::exists(candidate)) return std::filesystem::weakly_canonical(candidate).string();
  return "";
}

std::string cell(std::optional<double> v, const char* format = "%.3g") {
  if (!v) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, *v);
  return text;
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  return a && b && *b > 0 ? std::optional<double>(*a / *b) : std::nullopt;
}

json to_json(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

// Every run, by side: "kiln lazy 1t", "kiln lazy 2t", "kiln eager 1t", ..., "libtorch 2t".
using Sides = std::map<std::string, Side>;

// A workload's best figure among the runs of one kind ("kiln lazy") at its thread counts.
struct Best {
  const Measurement* m = nullptr;
  std::string threads = "-";  // "1t", "2t"
  std::optional<double> ms() const { return m ? std::optional<double>(m->ms) : std::nullopt; }
};
Best best_of(const Sides& sides, const std::string& kind, const std::string& name) {
  Best best;
  for (const auto& [side, results] : sides) {
    if (side.rfind(kind + " ", 0) != 0) continue;
    auto it = results.find(name);
    if (it != results.end() && (!best.m || it->second.ms < best.m->ms))
      best = {&it->second, side.substr(kind.size() + 1)};
  }
  return best;
}

// The machine the figures belong to: the CPU's model, its cores and the target kernels were built
// for (the same program ran at half the speed when a session's machine changed from AVX-512 to
// AVX2, so a table means little without it).
std::string machine_description() {
  // A virtual machine may name only the vendor ("AMD EPYC"): family and model tell the core.
  std::map<std::string, std::string> cpu;  // the first processor's fields
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line) && !line.empty();)
    if (const auto colon = line.find(':'); colon != std::string::npos) {
      const auto key_end = line.find_last_not_of(" \t", colon - 1);
      cpu[line.substr(0, key_end == std::string::npos ? 0 : key_end + 1)] =
          line.substr(std::min(colon + 2, line.size()));
    }
  std::string model = cpu.count("model name") ? cpu["model name"] : "unknown CPU";
  if (cpu.count("cpu family") && cpu.count("model"))
    model += " (family " + cpu["cpu family"] + ", model " + cpu["model"] + ")";
  std::string target;
  try {
    target = codegen::halide::compiler_target();
  } catch (const Error& e) {
    target = std::string("none (") + e.what() + ")";
  }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores; kernels for " + target;
}

struct Limits {
  std::string machine;                      // machine_description()
  std::optional<double> bandwidth, gflops;  // bytes/s of the triad, GFLOP/s of sgemm: the best any run reached
  std::string bandwidth_name = "triad";     // on a GPU, a copy-like pass in device memory
};
Limits machine_limits(const Sides& sides, const Device& device) {
  Limits l;
  l.machine = machine_description();
  if (device.is_cuda()) {
    const cuda_driver::DeviceProperties p = cuda_driver::device_properties(int(std::max<int64_t>(device.index(), 0)));
    l.machine += "; workloads on " + device.str() + ": " + p.name + " (sm_" + std::to_string(p.major) +
                 std::to_string(p.minor) + ", " + std::to_string(p.multiprocessors) + " SMs)";
    l.bandwidth_name = "device copy";
  }
  auto keep_best = [](std::optional<double>& into, std::optional<double> v) {
    if (v && (!into || *v > *into)) into = v;
  };
  for (const auto& [side, results] : sides)
    for (const auto& [name, m] : results) {
      if (is_limit(name)) keep_best(l.bandwidth, m.counter("bytes_per_second"));
      if (name == "Sgemm") keep_best(l.gflops, m.counter("GFLOPS"));
    }
  return l;
}

struct Row {
  std::string workload;
  Best libtorch, eager, lazy, tuned;
  std::optional<double> floor_ms, launches;
};

Row make_row(const Sides& sides, const Limits& limits, const std::string& name) {
  Row row{name,
          best_of(sides, "libtorch", name),
          best_of(sides, "kiln eager", name),
          best_of(sides, "kiln lazy", name),
          best_of(sides, "kiln tuned", name),
          {},
          {}};
  const Measurement& lazy = *row.lazy.m;
  row.launches = lazy.counter("launches");
  if (auto bytes = lazy.counter("bytes"); bytes && limits.bandwidth) row.floor_ms = *bytes / *limits.bandwidth * 1e3;
  if (auto flops = lazy.counter("flops"); flops && limits.gflops)
    row.floor_ms = std::max(row.floor_ms.value_or(0), *flops / (*limits.gflops * 1e9) * 1e3);
  return row;
}

// The sides must have computed the same thing, and no timed loop may have compiled.
void check_row(const Sides& sides, const Row& row, std::vector<std::string>& problems) {
  const auto reference = row.lazy.m->counter("check");
  for (const auto& [side, results] : sides) {
    auto it = results.find(row.workload);
    if (it == results.end()) continue;
    const auto check = it->second.counter("check");
    if (reference && check && std::abs(*check - *reference) > 1e-3 * std::max(std::abs(*reference), 1e-6))
      problems.push_back(row.workload + ": check " + cell(check, "%.6g") + " (" + side + ") differs from " +
                         cell(reference, "%.6g") + " (kiln lazy)");
    if (it->second.counter("compiled").value_or(0) > 0)
      problems.push_back(row.workload + " (" + side + "): " + cell(it->second.counter("compiled"), "%.0f") +
                         " kernels compiled inside the timed loop");
  }
}

void print_table(const Limits& limits, const std::vector<Row>& rows, const std::vector<std::string>& problems) {
  std::printf("\nMachine: %s\n", limits.machine.c_str());
  std::printf("Machine limits (best of all runs): %s %s GB/s, sgemm %s GFLOP/s\n\n", limits.bandwidth_name.c_str(),
              cell(ratio(limits.bandwidth, 1e9), "%.1f").c_str(), cell(limits.gflops, "%.0f").c_str());
  const bool tuned = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.tuned.m; });
  std::printf(
      "| workload | libtorch (ms, best threads) | kiln eager | kiln lazy |%s libtorch / kiln lazy | floor (ms) "
      "| share of floor | kernels per step |\n| --- | --- | --- | --- |%s --- | --- | --- | --- |\n",
      tuned ? " kiln tuned (gain) |" : "", tuned ? " --- |" : "");
  auto timed = [](const Best& b) { return b.m ? cell(b.ms()) + " (" + b.threads + ")" : std::string("-"); };
  for (const Row& r : rows) {
    const auto speedup = ratio(r.libtorch.ms(), r.lazy.ms()), share = ratio(r.floor_ms, r.lazy.ms());
    const std::string tuned_cell =
        tuned ? " " + timed(r.tuned) + " " + cell(ratio(r.lazy.ms(), r.tuned.ms()), "%.2f") + "x |" : "";
    std::printf("| %s | %s | %s | %s |%s %s | %s | %s | %s |\n", r.workload.c_str(), timed(r.libtorch).c_str(),
                timed(r.eager).c_str(), timed(r.lazy).c_str(), tuned_cell.c_str(),
                speedup ? (cell(speedup, "%.2f") + "x").c_str() : "-", cell(r.floor_ms).c_str(),
                share ? (cell(*share * 100, "%.0f") + "%").c_str() : "-", cell(r.launches, "%.0f").c_str());
  }
  std::printf("\nchecks: %s\n", problems.empty() ? "all sides agree, nothing compiled while timed" : "PROBLEMS");
  for (const auto& p : problems) std::printf("  %s\n", p.c_str());
}

void write_json(const std::string& path, const Sides& sides, const Limits& limits, const std::vector<Row>& rows,
                const std::vector<std::string>& problems) {
  json out = {{"machine", limits.machine},
              {"limits",
               {{"triad_bytes_per_second", to_json(limits.bandwidth)},
                {"bandwidth_measured_by", limits.bandwidth_name},
                {"sgemm_gflops", to_json(limits.gflops)}}},
              {"problems", problems},
              {"table", json::array()},
              {"runs", json::object()}};
  for (const Row& r : rows)
    out["table"].push_back({{"workload", r.workload},
                            {"libtorch_ms", to_json(r.libtorch.ms())},
                            {"libtorch_threads", r.libtorch.threads},
                            {"kiln_eager_ms", to_json(r.eager.ms())},
                            {"kiln_eager_threads", r.eager.threads},
                            {"kiln_lazy_ms", to_json(r.lazy.ms())},
                            {"kiln_lazy_threads", r.lazy.threads},
                            {"kiln_tuned_ms", to_json(r.tuned.ms())},
                            {"kiln_tuned_threads", r.tuned.threads},
                            {"ratio", to_json(ratio(r.libtorch.ms(), r.lazy.ms()))},
                            {"floor_ms", to_json(r.floor_ms)},
                            {"share_of_floor", to_json(ratio(r.floor_ms, r.lazy.ms()))},
                            {"kernels_per_step", to_json(r.launches)}});
  for (const auto& [side, results] : sides)
    for (const auto& [name, m] : results) out["runs"][side][name] = {{"ms", m.ms}, {"counters", m.counters}};
  std::ofstream file(path);
  file << out.dump(1) << "\n";
  if (!file) throw Error("bench: cannot write " + path);
}

// Speed relative to libtorch (or to kiln eager without it): above 1 is faster.
void write_plot(const std::string& path, const std::vector<Row>& rows, bool have_libtorch) {
  BarChart chart;
  chart.title = have_libtorch ? "Speed relative to libtorch 1.13 (each side at its best of 1 and 2 threads), log scale"
                              : "Speed relative to kiln eager, log scale";
  chart.series = {{"kiln eager", "#9ecae1", {}}, {"kiln lazy", "#e6550d", {}}, {"floor", "#636363", {}}};
  for (const Row& r : rows) {
    const auto base = have_libtorch ? r.libtorch.ms() : r.eager.ms();
    chart.categories.push_back(r.workload);
    chart.series[0].values.push_back(ratio(base, r.eager.ms()));
    chart.series[1].values.push_back(ratio(base, r.lazy.ms()));
    chart.series[2].values.push_back(ratio(base, r.floor_ms));
  }
  write_svg(chart, path);
}

}  // namespace

int bench(const BenchOptions& o) {
  const Device device(o.device);
  KILN_CHECK(device.is_cpu() || cuda::is_available(), "bench: --device ", o.device,
             " was asked for, but CUDA is not available: ", cuda::unavailable_reason());
  ::setenv("BENCH_DEVICE", device.str().c_str(), 1);  // perf/bench_common.h's bench_device()
  if (device.is_cuda() && !o.no_libtorch)
    std::fprintf(stderr, "bench: the libtorch column stays empty on %s (Debian's libtorch has no CUDA)\n",
                 device.str().c_str());
  std::string libtorch = o.no_libtorch || device.is_cuda() ? ""
                         : o.libtorch.empty()              ? find_libtorch_program()
                                                           : o.libtorch;
  if (!o.no_libtorch && !device.is_cuda() && libtorch.empty())
    std::fprintf(stderr,
                 "bench: perf/bench_workloads_libtorch not found (install libtorch-dev and build perf/, or pass "
                 "--libtorch); the libtorch column stays empty\n");

  // Each side at 1 and 2 threads (or the given count); the table keeps each side's best. The sides
  // take turns in rounds, each running every workload once per round, so that a busy minute on a
  // shared machine slows all of them rather than one; a figure is a side's median over the rounds.
  const std::vector<int> thread_counts = o.threads > 0 ? std::vector<int>{o.threads} : std::vector<int>{1, 2};
  set_benchmark_flags(o);
  const int saved_threads = get_num_threads();
  const bool saved_use_tuned = config().use_tuned;
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::vector<Measurement>>> rounds;  // side -> workload -> runs
  auto keep = [&](const std::string& side, Side results) {
    for (auto& [name, m] : results) rounds[side][name].push_back(std::move(m));
  };
  for (int round = 1; round <= o.repetitions; ++round) {
    if (o.repetitions > 1) std::fprintf(stderr, "round %d of %d\n", round, o.repetitions);
    for (const std::string kind : {"kiln lazy", "kiln tuned", "kiln eager"}) {
      if ((kind == "kiln eager" && o.no_eager) || (kind == "kiln tuned" && !o.tuned)) continue;
      // With a tuned side, kiln lazy runs the hand schedules.
      config().use_tuned = kind == "kiln tuned" || (kind == "kiln lazy" && !o.tuned);
      for (int threads : thread_counts) {
        set_num_threads(threads);
        keep(kind + " " + std::to_string(threads) + "t", run_kiln(o, kind, threads, order));
      }
    }
    config().use_tuned = saved_use_tuned;
    set_num_threads(saved_threads);
    if (!libtorch.empty())
      for (int threads : thread_counts)
        keep("libtorch " + std::to_string(threads) + "t", run_libtorch(o, libtorch, threads));
  }
  Sides sides;
  for (auto& [side, workloads] : rounds)
    for (auto& [name, runs] : workloads) {
      std::sort(runs.begin(), runs.end(), [](const Measurement& a, const Measurement& b) { return a.ms < b.ms; });
      Measurement median = runs[(runs.size() - 1) / 2];
      for (const auto& run : runs)  // a compile in any round counts, not the median round's
        if (auto compiled = run.counter("compiled"))
          median.counters["compiled"] = std::max(median.counter("compiled").value_or(0), *compiled);
      sides[side][name] = median;
    }

  const Limits limits = machine_limits(sides, device);
  std::vector<Row> rows;
  std::vector<std::string> problems;
  for (const std::string& name : order) {
    if (is_limit(name)) continue;
    rows.push_back(make_row(sides, limits, name));
    check_row(sides, rows.back(), problems);
  }
  print_table(limits, rows, problems);
  if (!o.json.empty()) write_json(o.json, sides, limits, rows, problems);
  if (!o.plot.empty()) write_plot(o.plot, rows, !libtorch.empty());
  return problems.empty() ? 0 : 1;
}

}  // namespace kiln::cli
