// Builds the per-op CUDA kernels (codegen/cuda/per_op.h) ahead of time, while kiln is built: one
// cubin per architecture named on the command line, into FOLDER, named per_op_library_file (the
// source's hash), so that a flush on those GPUs never waits for NVRTC. A cubin already there is
// kept, those of other sources removed. Without NVRTC (no CUDA toolkit), it says so and builds nothing: kiln then
// compiles the per-op kernels at their first use.
//   kiln_build_per_op_cubins FOLDER ARCH...     (e.g. build/cuda-per-op 80 90)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/cuda/nvrtc.h"
#include "codegen/cuda/per_op.h"

int main(int argc, char** argv) {
  namespace cuda = kiln::codegen::cuda;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FOLDER ARCH...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path folder = argv[1];
  std::filesystem::create_directories(folder);  // installed, if empty, either way
  std::string why;
  if (!cuda::nvrtc_available(&why)) {
    std::printf("per-op CUDA kernels not built ahead of time: %s\n", why.c_str());
    return 0;
  }
  // Cubins of an earlier source are never loaded again (their hash differs): not shipped either.
  const std::string current = cuda::per_op_library_file(0).substr(0, cuda::per_op_library_file(0).rfind("-sm_"));
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("kiln-cuda-per-op-", 0) == 0 && name.rfind(current, 0) != 0) std::filesystem::remove(entry.path());
  }
  for (int i = 2; i < argc; ++i) {
    const int arch = std::atoi(argv[i]);
    const std::filesystem::path path = folder / cuda::per_op_library_file(arch);
    if (std::filesystem::exists(path)) continue;
    const auto start = std::chrono::steady_clock::now();
    const cuda::CompiledCuda c =
        cuda::nvrtc_compile(cuda::per_op_library_source(), "kiln_per_op.cu", arch, "the per-op kernels");
    if (c.ptx_only) {
      std::printf("NVRTC has no sm_%d: per-op kernels for it are compiled at their first use\n", arch);
      continue;
    }
    const std::string temporary = path.string() + ".tmp";
    std::ofstream(temporary, std::ios::binary).write(c.image.data(), std::streamsize(c.image.size()));
    std::filesystem::rename(temporary, path);
    std::printf("built %s (%zu KiB) in %.1f s\n", path.c_str(), c.image.size() >> 10,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 0;
}
