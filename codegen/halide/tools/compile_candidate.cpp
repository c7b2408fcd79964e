// The child process of a tuning candidate's build (codegen/halide/candidate_process.cpp): rebuilds
// the kernel from the job file (its text, a line "end", then the key naming its symbol), compiles
// and links it with the schedule into the file named, says "compiled <seconds>", runs it once on
// random inputs, says "ran <microseconds>". The parent kills it past its time limits.
// Usage: kiln_compile_candidate <job file> <schedule> <shared object to write>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "codegen/halide/kernel_cache.h"
#include "codegen/halide/kernel_text.h"
#include "codegen/halide/launcher.h"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace kiln::codegen::halide;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <job file> <schedule> <shared object>\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    std::ostringstream job;
    job << in.rdbuf();
    const std::string text = job.str();
    const size_t end = text.find("\nend\n");
    if (!in || end == std::string::npos) {
      std::fprintf(stderr, "%s: %s is not a job file\n", argv[0], argv[1]);
      return 2;
    }
    RebuiltKernel k = rebuild_kernel(text.substr(0, end + 1));
    auto start = std::chrono::steady_clock::now();
    KernelFn fn = kernel_cache().build_candidate_at(k.kernel, text.substr(end + 5), argv[2], argv[3]);
    std::printf("compiled %.6f\n", seconds_since(start));
    std::fflush(stdout);
    start = std::chrono::steady_clock::now();
    launch(k.kernel, fn);
    std::printf("ran %.3f\n", seconds_since(start) * 1e6);
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
