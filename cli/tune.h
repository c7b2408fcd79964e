// `kiln tune`: finds faster schedules for the kernels of a workload and stores them in the tuning
// database (codegen/halide/tune.h), where every later run finds them. Two passes: the first runs
// the workload recording each kernel it launches with its size bucket (KILN_TUNE_RECORD); the
// second runs it again tuning each recorded kernel not yet in the database before its first
// launch, the budget shared among them (KILN_TUNE_SECONDS). `kiln bench` workloads run in this
// process; a program (`kiln tune -- PROGRAM ARGS`) is run twice with those variables set.
#pragma once
#include <string>
#include <vector>

namespace kiln::cli {

struct TuneOptions {
  std::vector<std::string> workloads;  // `kiln bench` workload names
  bool all = false;                    // every `kiln bench` workload
  std::vector<std::string> program;    // a program and its arguments
  double budget = 300;                 // seconds in all
  int jobs = 0;                        // candidates compiling at once; 0: the cores
  bool report = false;                 // print the tuning database
};

// Returns the process exit status.
int tune(const TuneOptions& options);

}  // namespace kiln::cli
