#include "cli/tune.h"

#include <benchmark/benchmark.h>
#include <kiln/kiln.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "codegen/halide/tune.h"
#include "runtime/config.h"

namespace kiln::cli {
namespace {

using codegen::halide::RecordedKernel;
using codegen::halide::TuneRecord;
using Clock = std::chrono::steady_clock;

// Google Benchmark's runs are not reported: tuning times kernels itself.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

std::string workload_filter(const TuneOptions& o) {
  if (o.all) return ".";
  std::string names;
  for (const auto& w : o.workloads) names += (names.empty() ? "" : "|") + w;
  return "^BM_(" + names + ")(/|$)";
}

// Runs the workloads once; returns how many matched.
size_t run_workloads(const std::string& filter) {
  static bool initialized = false;
  if (!initialized) {  // Google Benchmark reads its settings from flags, once per process
    std::vector<std::string> args = {"kiln tune", "--benchmark_min_time=0.001"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    int argc = int(argv.size());
    benchmark::Initialize(&argc, argv.data());
    initialized = true;
  }
  Silent silent;
  return benchmark::RunSpecifiedBenchmarks(&silent, filter);
}

// Runs `program` with `env` added to the environment; returns its exit status.
int run_program(const std::vector<std::string>& program, const std::vector<std::string>& env) {
  std::vector<char*> argv;
  for (const auto& a : program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error("tune: fork failed");
  if (pid == 0) {
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "kiln tune: cannot run %s\n", argv[0]);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string temp_record() {
  return (std::filesystem::temp_directory_path() / ("kiln-tune-record-" + std::to_string(getpid()) + ".txt")).string();
}

// A recorded kernel's elements, from its description ("row 256x[512], 14 nodes").
double elements(const RecordedKernel& r) {
  const size_t from = r.kernel.find(' ') + 1, to = r.kernel.find(',');
  double n = 1;
  for (size_t i = from; i < to && i < r.kernel.size();) {
    if (!std::isdigit(static_cast<unsigned char>(r.kernel[i]))) {
      ++i;
      continue;
    }
    size_t used = 0;
    n *= std::stod(r.kernel.substr(i), &used);
    i += used;
  }
  return n;
}

double gain(const TuneRecord& r) { return r.hand_us / std::max(r.tuned_us, 1e-9); }

// One line per kernel tuned: a bar of kernels done, the best gain so far, the time left.
class TuneBar {
 public:
  TuneBar(int total, double budget) : total_(std::max(total, 1)), budget_(budget), start_(Clock::now()) {}
  void report(const codegen::halide::TuneProgress& p) {
    best_ = std::max(best_, gain(p.record));
    constexpr int kWidth = 24;
    const int filled = std::min(kWidth, p.done * kWidth / total_);
    std::string bar(size_t(kWidth), ' ');
    for (int i = 0; i < filled; ++i) bar[size_t(i)] = '=';
    if (filled < kWidth) bar[size_t(filled)] = '>';
    const double left = std::max(0.0, budget_ - std::chrono::duration<double>(Clock::now() - start_).count());
    const TuneRecord& r = p.record;
    std::fprintf(stderr, "tune [%s] %d/%d kernels, best gain %.2fx, ~%.0f s left | %s: %.1f -> %.1f us (%.2fx, %s)\n",
                 bar.c_str(), p.done, total_, best_, left, r.kernel.c_str(), r.hand_us, r.tuned_us, gain(r),
                 r.schedule.c_str());
  }

 private:
  int total_;
  double budget_, best_ = 1;
  Clock::time_point start_;
};

int print_report() {
  std::vector<TuneRecord> records = codegen::halide::tuning_db().all();
  std::sort(records.begin(), records.end(), [](const TuneRecord& a, const TuneRecord& b) { return gain(a) > gain(b); });
  std::printf("tuning database: %s (%zu kernels)\n\n", codegen::halide::tuning_db().dir().c_str(), records.size());
  std::printf(
      "| kernel | sizes | schedule | hand (us) | tuned (us) | gain | candidates (rejected, failed) | tuning (s) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  double log_sum = 0, seconds = 0;
  size_t general = 0;  // size-specialization decisions (the general kernel serves): not schedules
  for (const TuneRecord& r : records) {
    std::printf("| %s | %s | %s | %.1f | %.1f | %.2fx | %d (%d, %d) | %.1f |\n", r.kernel.c_str(), r.bucket.c_str(),
                r.schedule.c_str(), r.hand_us, r.tuned_us, gain(r), r.candidates, r.rejected, r.failed, r.seconds);
    seconds += r.seconds;
    if (r.schedule == codegen::halide::kGeneralSchedule)
      ++general;
    else
      log_sum += std::log(gain(r));
  }
  if (records.size() > general)
    std::printf("\ngeometric-mean gain %.3fx over %zu kernels, %.0f s of tuning\n",
                std::exp(log_sum / double(records.size() - general)), records.size() - general, seconds);
  if (general > 0)
    std::printf(
        "%zu kernels at sizes that specialize them are served by their general kernel (schedule %s: "
        "the specialization does not pay)\n",
        general, codegen::halide::kGeneralSchedule);
  return 0;
}

}  // namespace

int tune(const TuneOptions& o) {
  const bool workloads = o.all || !o.workloads.empty();
  if (!workloads && o.program.empty())
    return o.report ? print_report()
                    : (std::fprintf(stderr, "kiln tune: name --workload, --all or -- PROGRAM (see --help)\n"), 2);
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1, int(std::thread::hardware_concurrency()));
  const std::string record = temp_record();
  std::filesystem::remove(record);
  const auto start = Clock::now();

  // Pass 1: which kernels run, in which size buckets, and which are tuned already.
  if (workloads) {
    config().tune_record = record;
    const size_t ran = run_workloads(workload_filter(o));
    config().tune_record.clear();
    if (ran == 0) throw Error("tune: no `kiln bench` workload matches " + workload_filter(o));
  } else if (const int rc = run_program(o.program, {"KILN_TUNE_RECORD=" + record}); rc != 0) {
    throw Error("tune: " + o.program[0] + " exited with status " + std::to_string(rc) + " while recording its kernels");
  }
  std::vector<RecordedKernel> recorded = codegen::halide::read_tune_record(record);
  // The smallest first: most of them take a launch's own time, are measured and left as they are
  // at once, and leave their share of the budget to the larger ones, which compile longer.
  std::stable_sort(recorded.begin(), recorded.end(),
                   [](const RecordedKernel& a, const RecordedKernel& b) { return elements(a) < elements(b); });
  std::filesystem::remove(record);
  const int todo = int(std::count_if(recorded.begin(), recorded.end(), [](const auto& r) { return !r.known; }));
  std::fprintf(stderr, "tune: %zu kernels, %d to tune, %.0f s budget, %d jobs\n", recorded.size(), todo, o.budget,
               jobs);

  // Pass 2: each kernel not yet in the database, rebuilt from the record with random inputs and
  // tuned here, the budget shared.
  if (todo > 0) {
    TuneBar bar(todo, o.budget);
    int done = 0;
    for (const RecordedKernel& r : recorded) {
      if (r.known) continue;
      const double left = o.budget - std::chrono::duration<double>(Clock::now() - start).count();
      codegen::halide::TuneOptions options;
      options.seconds = std::max(0.1, left / (todo - done));
      options.jobs = jobs;
      options.compile_limit_s = o.compile_limit;
      options.run_limit_s = o.run_limit;
      options.below_us = o.below_us;
      try {
        if (auto tuned = codegen::halide::tune_recorded(r, options)) bar.report({*tuned, ++done});
      } catch (const Error& e) {
        std::fprintf(stderr, "tune: %s (%s) not tuned: %s\n", r.kernel.c_str(), r.bucket.c_str(), e.what());
        ++done;
      }
    }
  }
  std::fprintf(stderr, "tune: done in %.0f s\n", std::chrono::duration<double>(Clock::now() - start).count());
  return o.report ? print_report() : 0;
}

}  // namespace kiln::cli
