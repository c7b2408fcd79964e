// Kernel autotuning (`kiln tune`, cli/tune.h) and the use of its results. A kernel is tuned in the
// process that runs it, just before its first launch, on the inputs it is about to get: each
// candidate schedule (schedule_params.h: the hand schedule's parameters varied, and Halide's
// autoschedulers) is compiled (several at once), run, its outputs checked against the hand
// schedule's (a wrong answer is rejected), warmed up and timed to a budget (median); the best few
// are timed again interleaved with the hand schedule, and one is kept only if it is faster by a
// margin. The choice, faster or not, goes into the tuning database (tune_db.h), the tuned kernel
// into the kernel cache. Every later flush of every process looks the database up once per
// kernel structure and size bucket and runs the tuned kernel (statistic kernels_tuned_used;
// KILN_TUNED=0 turns it off); a miss runs the hand schedule.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/halide/launcher.h"
#include "codegen/halide/schedule_params.h"
#include "codegen/halide/tune_db.h"
#include "fusion/partition_cache.h"

namespace kiln::codegen::halide {

// A flush's side: replaces each kernel's function in `fns` (the hand schedule's, or null) with its
// tuned one where the database has one for the kernel's size bucket.
void use_tuned_kernels(const fusion::Partition& partition, std::vector<KernelFn>& fns);

// Whether kernels are being recorded or tuned before their launch (KILN_TUNE_RECORD, KILN_TUNE_SECONDS).
bool tuning();
// Records `k` (KILN_TUNE_RECORD), and tunes it if it is not yet in the database (KILN_TUNE_SECONDS);
// its reads must be computed, its outputs not yet. `hand` is its hand-scheduled function.
void tune_before_launch(const fusion::Kernel& k, const std::string& key, KernelFn hand);

// How one kernel is tuned.
struct TuneOptions {
  double seconds = 10;  // for the whole kernel: compiling, checking, timing
  int jobs = 1;         // candidates compiling at once
  // A candidate is kept if its time, interleaved with the hand schedule's, is at most this
  // fraction of it: closer is noise on a shared machine.
  double margin = 0.97;
  // A kernel whose hand schedule takes less (microseconds) is left as it is: its time is the launch's.
  double below_us = 2;
  // A candidate whose compile, or whose first run, takes longer is abandoned (its child process
  // killed: KernelCache::build_candidate).
  double compile_limit_s = 30;
  double run_limit_s = 2;
  // Tests: called on each candidate's output buffers after it ran, before they are checked.
  std::function<void(std::vector<BufferPtr>&)> after_candidate_run;
};
// The schedules tuning tries for `k` besides the hand one, in the order it compiles them: none
// compiles to the hand kernel or to another's (effective_params).
std::vector<ScheduleChoice> tune_candidates(const fusion::Kernel& k);
// Tunes `k` (as tune_before_launch) and stores the result; returns it.
TuneRecord tune_kernel(const fusion::Kernel& k, const std::string& key, KernelFn hand, const TuneOptions& options);

// What tuning reports as each kernel is done: the record, and how many kernels are done.
struct TuneProgress {
  const TuneRecord& record;
  int done;
};
// Replaces the default report, a line on stderr per kernel (`kiln tune` draws its own).
void set_tune_progress(std::function<void(const TuneProgress&)> report);
// Forgets which kernels this process has recorded or tuned (`kiln tune` records a workload, then
// runs it again to tune what it recorded).
void reset_tune_session();
// Tests: the margin and hook tune_before_launch tunes with (TuneOptions), every kernel however short.
void set_tune_testing(double margin, std::function<void(std::vector<BufferPtr>&)> after_candidate_run);

// One entry of a KILN_TUNE_RECORD file: a line "kernel <bucket> <known> <description>", known 1
// when the database already has the kernel (then `kiln tune` has nothing to do for it), then the
// kernel's text (kernel_text.h) and a line "end".
struct RecordedKernel {
  std::string bucket, kernel;
  bool known = false;
  std::string text;
};
std::vector<RecordedKernel> read_tune_record(const std::string& path);
// Tunes a recorded kernel in this process, rebuilt from its text with random inputs (a program
// runs once to record its kernels; `kiln tune` tunes them afterwards), and stores the result; nullopt
// when the database has it already. Throws kiln::Error on a text it cannot rebuild.
std::optional<TuneRecord> tune_recorded(const RecordedKernel& r, const TuneOptions& options);

}  // namespace kiln::codegen::halide
