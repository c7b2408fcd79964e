// perf/workloads.cpp's rows on the fake CUDA device of tests/cuda_fake_driver.h, as `kiln bench
// --device cuda` runs them on a GPU (tensors and modules made on the device, each iteration
// waiting for it): a test that the rows run there, not a timing (the fake device's kernels are
// their CUDA source emulated on the host). Fails unless kernels were launched on the device.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "perf/bench_common.h"
#include "tests/cuda_fake_driver.h"

static WaitForCompilers wait_for_compilers;

int main(int argc, char** argv) {
  ::setenv("BENCH_DEVICE", "cuda", 1);
  kiln_test::use_fake_cuda(true);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  const kiln_test::FakeCudaCounts counts = kiln_test::fake_cuda_counts();
  std::printf("[fake cuda] %d launches, %d GEMMs on the device\n", counts.launches, counts.gemms);
  benchmark::Shutdown();
  kiln_test::use_fake_cuda(false);
  return counts.launches > 0 ? 0 : 1;
}
