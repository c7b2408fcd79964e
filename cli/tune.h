// `kiln tune`: finds faster schedules for the kernels of a workload and stores them in the tuning
// database (codegen/halide/tune.h), where every later run finds them. The workload runs once,
// recording each kernel it launches with its sizes (KILN_TUNE_RECORD: the kernel's text, see
// codegen/halide/kernel_text.h); then each recorded kernel not yet in the database is rebuilt here
// with random inputs and tuned, the budget shared among them. `kiln bench` workloads run in this
// process; a program (`kiln tune -- PROGRAM ARGS`) runs once as a child with that variable set.
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
  double compile_limit = 30;           // seconds a candidate may compile before it is abandoned
  double run_limit = 2;                // seconds its first run may take
  // Kernels faster than this by hand are left as they are (their time is the launch's): under
  // 2 us, TinyOps' 8-element kernels still ran 4% faster in vectors of 8 lanes on AVX-512.
  double below_us = 0.5;
};

// Returns the process exit status.
int tune(const TuneOptions& options);

}  // namespace kiln::cli
